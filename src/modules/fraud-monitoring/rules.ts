import type { FraudAction, FraudRule } from '../../../db/schema/enums';

// The fraud-monitoring rules (Nacha's rule for non-consumer Originators, in force 19 June 2026: risk-based
// processes reasonably intended to identify debits that are unauthorized or authorized under false pretenses).
// Each rule has an id, a version (raised when what it catches changes, and kept on every alert it raised), the
// reason it exists, where it is evaluated, the actions it may take and its settings with their defaults and
// bounds. The lender's policy (policy.ts) turns each on or off, picks its action and its settings within these
// bounds. docs/fraud-monitoring.md says the same for people; tests/modules/fraud-monitoring holds both to it.
// The functions below decide a hit from facts already read: pure, each linear in its bounded input.

export interface SettingSpec {
  default: number;
  minimum: number;
  maximum: number;
  description: string;
}

export interface RuleSpec {
  id: FraudRule;
  version: number;
  /** What it catches. */
  catches: string;
  /** Why it exists. */
  reason: string;
  /** Where the service evaluates it. */
  evaluatedAt: string;
  actions: readonly FraudAction[];
  defaultAction: FraudAction;
  settings: Readonly<Record<string, SettingSpec>>;
}

export const RULES: Readonly<Record<FraudRule, RuleSpec>> = {
  first_debit_unvalidated: {
    id: 'first_debit_unvalidated',
    version: 1,
    catches: 'The first debit of a borrower to a bank account that has no validation evidence since its number last changed',
    reason: 'An account never shown to be open and the borrower’s is where a debit under false pretenses lands first; Nacha’s WEB rule asks for validation before the first use of an account',
    evaluatedAt: 'a planned debit',
    actions: ['hold', 'alert'],
    defaultAction: 'alert',
    settings: {},
  },
  account_changed: {
    id: 'account_changed',
    version: 1,
    catches: 'A debit within window_days after the borrower’s account or routing number changed (a re-send with another account, or a Notification of Change applied)',
    reason: 'A changed account just before a debit is how account takeover and payment redirection show; the change itself is the fact to look at',
    evaluatedAt: 'a planned debit',
    actions: ['hold', 'alert'],
    defaultAction: 'alert',
    settings: { window_days: { default: 30, minimum: 1, maximum: 180, description: 'Days after a change during which a debit is a hit' } },
  },
  shared_account: {
    id: 'shared_account',
    version: 1,
    catches: 'A bank account under more than max_borrowers of the lender’s borrowers, or a borrower on it whose name does not match another’s on it (the first by authorizer_unique_id)',
    reason: 'One account paying for several unrelated borrowers is a mark of synthetic or borrowed identities',
    evaluatedAt: 'an enrollment or re-send',
    actions: ['hold', 'alert'],
    defaultAction: 'alert',
    settings: { max_borrowers: { default: 2, minimum: 1, maximum: 50, description: 'Borrowers one account may be under before it is a hit' } },
  },
  owner_mismatch: {
    id: 'owner_mismatch',
    version: 1,
    catches: 'A borrower enrolled with a bank_link whose account’s owners, as the provider names them (Plaid /identity/get, Stripe Financial Connections ownership), include none matching the borrower’s name',
    reason: 'A debit to an account its owner never agreed to is the plainest unauthorized debit; the provider knows who holds the account',
    evaluatedAt: 'an enrollment or re-send with a bank_link, where the lender’s bank-data connection has the identity product',
    actions: ['hold', 'alert'],
    defaultAction: 'alert',
    settings: {},
  },
  amount_outlier: {
    id: 'amount_outlier',
    version: 1,
    catches: 'A debit more than factor times the median of the borrower’s earlier debits (at least min_history of them), or else of the lender’s latest debits',
    reason: 'A sudden large debit is the one a fraudulent authorization is made for',
    evaluatedAt: 'a planned debit',
    actions: ['hold', 'alert'],
    defaultAction: 'alert',
    settings: {
      factor: { default: 3, minimum: 2, maximum: 50, description: 'How many times the median a debit may be before it is a hit' },
      min_history: { default: 3, minimum: 1, maximum: 20, description: 'Earlier debits needed for a median (the borrower’s, else the lender’s)' },
    },
  },
  velocity: {
    id: 'velocity',
    version: 1,
    catches: 'More than max_debits debits to one bank account, whichever borrowers they are for, within window_days',
    reason: 'Many debits to one account in a short time drain it before a holder can object',
    evaluatedAt: 'a planned debit',
    actions: ['hold', 'alert'],
    defaultAction: 'alert',
    settings: {
      max_debits: { default: 3, minimum: 1, maximum: 31, description: 'Debits one account may take within the window' },
      window_days: { default: 7, minimum: 1, maximum: 90, description: 'The window, in days, ending at the debit' },
    },
  },
  unauthorized_streak: {
    id: 'unauthorized_streak',
    version: 1,
    catches:
      'At least threshold unauthorized-class returns (R05, R07, R10, R11, R29, R51) within window_days on one institution (routing number), one day of enrollments, or one lender-supplied channel (the enrollment’s metadata.channel)',
    reason: 'Unauthorized returns that cluster point at a compromised source of borrowers, not at one borrower',
    evaluatedAt: 'a recorded return',
    actions: ['alert'],
    defaultAction: 'alert',
    settings: {
      threshold: { default: 3, minimum: 2, maximum: 100, description: 'Unauthorized returns within the window that make a cluster' },
      window_days: { default: 30, minimum: 1, maximum: 90, description: 'The window, in days, ending at the return' },
    },
  },
};

/** The rules the service evaluates, in the order they are documented. */
export const RULE_IDS = Object.keys(RULES) as FraudRule[];

/** The median of a list of amounts (at most a few hundred: the stores bound what they read). */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : Math.round((s[mid - 1]! + s[mid]!) / 2);
}

/** amount_outlier: the median the debit is compared with (the borrower's, else the lender's), and whether it is a hit. */
export function amountOutlier(v: { amountCents: number; borrowerAmounts: readonly number[]; lenderAmounts: readonly number[]; factor: number; minHistory: number }) {
  const source = v.borrowerAmounts.length >= v.minHistory ? 'borrower' : v.lenderAmounts.length >= v.minHistory ? 'lender' : null;
  const baseline = source === 'borrower' ? median(v.borrowerAmounts) : source === 'lender' ? median(v.lenderAmounts) : null;
  return { hit: baseline !== null && baseline > 0 && v.amountCents > v.factor * baseline, baseline, source };
}

/** account_changed: the latest change, if any, was within the window before the debit. */
export const changedWithin = (changedAt: number | null, now: number, windowDays: number): boolean => changedAt !== null && changedAt <= now && now - changedAt <= windowDays * 86_400_000;
