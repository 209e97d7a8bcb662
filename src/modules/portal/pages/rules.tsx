import { Elysia } from 'elysia';
import type { Deps } from '../../../deps';
import { CHANGE_APPLICATIONS, REINITIATION_AMOUNTS, READ_CADENCES } from '../../../../db/schema/enums';
import { PolicyPatch } from '../../collection-policy/model';
import type { RegEElection } from '../../collection-policy/notice-windows';
import { InvalidInput } from '../../../platform/errors';
import { getPolicy, updatePolicy } from '../../collection-policy/service';
import { returnRates } from '../../return-rates/service';
import { formOf, page, portalSession, problemOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { Csrf, Notice, Table, Time, type Message } from '../ui/components';
import { RatesChart } from '../ui/charts';
import { count, percent } from '../ui/format';

// /portal/payments/rules: the collection policy of GET/PATCH /v1/collection_policy as a form, each field with
// what it does and the rule it follows, and the return rates of GET /v1/return_rates.

const HERE = '/portal/payments/rules';
const CLASS_LABELS = { unauthorized: 'Unauthorized', administrative: 'Administrative', overall: 'Overall' } as const;
const CODES = {
  unauthorized: 'R05, R07, R10, R11, R29, R51',
  administrative: 'R02, R03, R04',
  overall: 'every return code',
} as const;

/** A whole number as typed, or the text itself (the schema then says what is wrong with it). */
const whole = (v: unknown, digits = 3) => (typeof v === 'string' && new RegExp(`^\\d{1,${digits}}$`).test(v.trim()) ? Number(v.trim()) : v);

// The payday rule's notices: a channel, or the lender's own (null), sent as "self" by the form.
const SELF = 'self';
const CHANNEL_WORDS = {
  electronic: 'electronic: debits wait for a notice confirmed inside its electronic window',
  mail: 'mail: debits wait for a notice confirmed inside its mail window',
  [SELF]: 'I send the payday rule’s notices myself: no debit waits for them',
} as const;
const REG_E_TYPES = ['none', 'always', 'outside_range', 'difference_over'] as const;
const REG_E_WORDS: Record<(typeof REG_E_TYPES)[number], string> = {
  none: 'never: no varying-amount notice is asked',
  always: 'always: whenever the amount differs from the last debit',
  outside_range: 'outside a range: only below the lowest or above the highest amount',
  difference_over: 'beyond a difference: only when it differs from the last debit by more than the amount',
};
const RANGE_MAX = 100_000_000;
const electionValue = (e: RegEElection, k: 'min_cents' | 'max_cents' | 'amount_cents') => (k in e ? String((e as Record<string, unknown>)[k]) : '');

/**
 * The Regulation E election the form chose, as the API's body takes it; undefined when the form sends none (the
 * policy's stays). Only the amounts of the chosen type are read; one missing or not a whole number names its field.
 */
function electionOf(raw: Record<string, unknown>): unknown {
  const type = raw.reg_e_type;
  if (type === undefined) return undefined;
  const cents = (field: string, key: string) => {
    const v = whole(raw[field], 9);
    if (typeof v !== 'number' || v > RANGE_MAX) throw InvalidInput.field(`/reg_e_election/${key}`, `Enter ${FIELD_WORDS[field]} as whole cents from 0 to ${RANGE_MAX}`);
    return v;
  };
  if (type === 'outside_range') return { type, min_cents: cents('reg_e_min_cents', 'min_cents'), max_cents: cents('reg_e_max_cents', 'max_cents') };
  if (type === 'difference_over') return { type, amount_cents: cents('reg_e_amount_cents', 'amount_cents') };
  return { type };
}
const FIELD_WORDS: Record<string, string> = {
  reg_e_min_cents: 'the lowest amount without a notice',
  reg_e_max_cents: 'the highest amount without a notice',
  reg_e_amount_cents: 'the largest difference without a notice',
};

async function RulesContent(props: { deps: Deps; s: PortalSession; message?: Message; csrf: string; now: number }) {
  const ctx = { lender: props.s.lender, deps: props.deps };
  const p = await getPolicy({ ctx });
  const r = await returnRates({ ctx, input: { windowDays: 60 } });
  return (
    <>
      <Notice message={props.message} />
      <section aria-labelledby="policy">
        <h2 id="policy">The rules of every automatic debit</h2>
        <p>
          Last changed: {p.updated_at ? <Time at={p.updated_at} now={props.now} /> : 'never (every rule at its default)'}. The next collection decision reads
          what you save here.
        </p>
        <form method="post" action={HERE}>
          <Csrf token={props.csrf} />
          <fieldset>
            <label for="cfpb_covered">
              <input id="cfpb_covered" name="cfpb_covered" type="checkbox" value="true" checked={p.cfpb_covered} aria-describedby="cfpb_covered-help" /> Loans covered by
              the CFPB payday rule
            </label>
            <small id="cfpb_covered-help">
              CFPB payday rule, 12 CFR 1041.8: after two consecutive debits fail for lack of funds, no further debit is attempted without a new authorization from the
              borrower.
            </small>
          </fieldset>
          <label for="max_reinitiations">Reinitiations of a returned debit, at most</label>
          <select id="max_reinitiations" name="max_reinitiations" aria-describedby="max_reinitiations-help">
            {[0, 1, 2].map((n) => (
              <option value={String(n)} selected={p.max_reinitiations === n}>
                {String(n)}
              </option>
            ))}
          </select>
          <small id="max_reinitiations-help">
            Nacha reinitiation rule: a debit returned R01 (insufficient funds) or R09 (uncollected funds) may be presented again at most twice, within 180 days of its
            settlement.
          </small>
          <label for="reinitiation_amount">Amount of a reinitiation</label>
          <select id="reinitiation_amount" name="reinitiation_amount" aria-describedby="reinitiation_amount-help">
            {REINITIATION_AMOUNTS.map((x) => (
              <option value={x} selected={p.reinitiation_amount === x}>
                {x === 'current' ? 'current: the collectable amount at the time' : 'original: the returned debit’s amount'}
              </option>
            ))}
          </select>
          <small id="reinitiation_amount-help">
            Nacha reinitiation rule: a reinitiation keeps the original entry’s amount; with “original” none is made when the collectable amount has dropped below
            it, with “current” the debit is the collectable amount at the time.
          </small>
          <label for="notice_days">Business days of notice before each debit</label>
          <input id="notice_days" name="notice_days" type="number" min={0} max={10} step={1} value={String(p.notice_days)} aria-describedby="notice_days-help" />
          <small id="notice_days-help">
            CFPB payday rule, 12 CFR 1041.9: a payment notice 3 business days before a withdrawal sent electronically (6 if mailed). A read that finds the
            balance covering the amount schedules the payment that many business days ahead instead of sending it; 0 sends at once. For covered loans with a
            notice channel below it is the lead of their notices and stays inside their windows (3 to 7 electronic, 6 to 10 mail); 0 lets each notice take its
            own.
          </small>
          <label for="notice_channel">How you send the payday rule’s payment notices</label>
          <select id="notice_channel" name="notice_channel" aria-describedby="notice_channel-help">
            {(['electronic', 'mail', SELF] as const).map((x) => (
              <option value={x} selected={(p.notice_channel ?? SELF) === x}>
                {CHANNEL_WORDS[x]}
              </option>
            ))}
          </select>
          <small id="notice_channel-help">
            CFPB payday rule, 12 CFR 1041.9(b): before a covered loan’s first payment, an unusual withdrawal or a reinitiation, the borrower gets a notice: electronic
            no earlier than 7 and no later than 3 business days before it (first payment: no later than 3), mail no earlier than 10 and no later than 6 (first: no
            later than 6). With a channel, such a debit is scheduled with PAYMENT_NOTICE_DUE and goes out only once you confirm the notice inside its window (on the
            borrower’s page or by the API); with “myself”, no debit waits for it.
          </small>
          <fieldset aria-describedby="reg_e-help">
            <legend>Regulation E notice of a varying amount, for borrowers without their own election</legend>
            <label for="reg_e_type">When a notice is asked</label>
            <select id="reg_e_type" name="reg_e_type">
              {REG_E_TYPES.map((x) => (
                <option value={x} selected={p.reg_e_election.type === x}>
                  {REG_E_WORDS[x]}
                </option>
              ))}
            </select>
            <label for="reg_e_min_cents">Lowest amount without a notice (cents; outside a range)</label>
            <input id="reg_e_min_cents" name="reg_e_min_cents" type="number" min={0} max={RANGE_MAX} step={1} value={electionValue(p.reg_e_election, 'min_cents')} />
            <label for="reg_e_max_cents">Highest amount without a notice (cents; outside a range)</label>
            <input id="reg_e_max_cents" name="reg_e_max_cents" type="number" min={0} max={RANGE_MAX} step={1} value={electionValue(p.reg_e_election, 'max_cents')} />
            <label for="reg_e_amount_cents">Largest difference from the last debit without a notice (cents; beyond a difference)</label>
            <input id="reg_e_amount_cents" name="reg_e_amount_cents" type="number" min={0} max={RANGE_MAX} step={1} value={electionValue(p.reg_e_election, 'amount_cents')} />
            <small id="reg_e-help">
              Regulation E, 12 CFR 1005.10(d): a preauthorized debit whose amount varies needs written notice of its amount and date at least 10 days before it,
              unless the borrower chose a notice only outside a range or beyond a difference. A debit that needs one is scheduled with PAYMENT_NOTICE_DUE and waits
              for your confirmation. Only the amounts of the choice made are read. A borrower’s own election (POST /v1/payment_enrollments/{'{id}'}/reg_e_election)
              comes first.
            </small>
          </fieldset>
          <label for="read_cadence">When monitored borrowers are read</label>
          <select id="read_cadence" name="read_cadence" aria-describedby="read_cadence-help">
            {READ_CADENCES.map((x) => (
              <option value={x} selected={p.read_cadence === x}>
                {x === 'payday' ? 'payday: around each predicted payday, every few days between' : 'interval: on the fixed read interval'}
              </option>
            ))}
          </select>
          <small id="read_cadence-help">
            A borrower who cannot pay today usually can on payday: with “payday”, a borrower whose pay cycle the service has learned from its balances is read the
            morning of each predicted payday and the morning after (the morning before too when its pay has come a day early), no more once the pay is seen, and
            every few days between; one whose cycle is unknown or irregular on the fixed interval.
          </small>
          <label for="time_zone">Your time zone (payday reads at 08:00 there)</label>
          <input id="time_zone" name="time_zone" type="text" maxlength={64} placeholder="UTC" value={p.time_zone ?? ''} aria-describedby="time_zone-help" />
          <small id="time_zone-help">
            An IANA time zone name such as America/Chicago: the reads around a payday are at 08:00 there, through daylight-saving changes. Empty: 08:00 UTC.
          </small>
          <label for="debit_buffer_cents">Buffer above the amount before a debit (cents)</label>
          <input id="debit_buffer_cents" name="debit_buffer_cents" type="number" min={0} max={10000000} step={1} value={String(p.debit_buffer_cents)} aria-describedby="debit_buffer_cents-help" />
          <small id="debit_buffer_cents-help">A debit waits until the balance covers the amount plus this much, so that the day’s spending before it settles is less likely to return it (R01).</small>
          <label for="late_return_window_days">Business days a settled debit may still come back</label>
          <input id="late_return_window_days" name="late_return_window_days" type="number" min={2} max={60} step={1} value={String(p.late_return_window_days)} aria-describedby="late_return_window_days-help" />
          <small id="late_return_window_days-help">
            Nacha return timing: an R01 or R09 comes back within two banking days of settlement. Until this many business days have passed, the debt’s chain stays
            open: a late return counts as the failure it is, and no new debit goes out for the borrower, re-sent or not.
          </small>
          <fieldset>
            <label for="allow_current_balance">
              <input id="allow_current_balance" name="allow_current_balance" type="checkbox" value="true" checked={p.allow_current_balance} aria-describedby="allow_current_balance-help" />{' '}
              Debit on a linked account’s current balance when it gives no available one
            </label>
            <small id="allow_current_balance-help">
              A current (ledger) balance does not take out pending debits; the available balance is what prevents a return for funds. Off: such a read decides no debit.
            </small>
          </fieldset>
          <label for="current_balance_buffer_cents">Buffer above the amount on a current balance (cents)</label>
          <input id="current_balance_buffer_cents" name="current_balance_buffer_cents" type="number" min={0} max={10000000} step={1} value={String(p.current_balance_buffer_cents)} aria-describedby="current_balance_buffer_cents-help" />
          <small id="current_balance_buffer_cents-help">With a current balance allowed, a debit on one waits until it covers this much more.</small>
          <label for="max_balance_age_minutes">Oldest linked balance a debit may follow (minutes)</label>
          <input id="max_balance_age_minutes" name="max_balance_age_minutes" type="number" min={1} max={1440} step={1} value={String(p.max_balance_age_minutes)} aria-describedby="max_balance_age_minutes-help" />
          <small id="max_balance_age_minutes-help">By the provider’s own time for the balance: an older one is recorded but decides no debit until a fresher read.</small>
          <label for="apply_notifications_of_change">Notifications of Change</label>
          <select id="apply_notifications_of_change" name="apply_notifications_of_change" aria-describedby="apply_notifications_of_change-help">
            {CHANGE_APPLICATIONS.map((x) => (
              <option value={x} selected={p.apply_notifications_of_change === x}>
                {x === 'automatic' ? 'automatic: applied to every borrower on the account at once' : 'review: debits to the account held until you apply it'}
              </option>
            ))}
          </select>
          <small id="apply_notifications_of_change-help">
            Nacha: a bank’s correction of an account’s details (C01 account number, C02 routing number…) is made within six banking days of receipt or before the
            next debit. Either way no debit goes to the old details once it is received; under review, apply it on the Bank accounts page.
          </small>
          <fieldset>
            <label for="require_account_validation">
              <input id="require_account_validation" name="require_account_validation" type="checkbox" value="true" checked={p.require_account_validation} aria-describedby="require_account_validation-help" />{' '}
              Require validation evidence before the first debit to an account
            </label>
            <small id="require_account_validation-help">
              Nacha WEB debit rule: an account is validated before its first debit and whenever its number changes: a bank link, or your own evidence sent with the
              borrower (account_validation: a prenote, micro-deposits, a third-party service).
            </small>
          </fieldset>
          <fieldset>
            <label for="return_rate_pause">
              <input id="return_rate_pause" name="return_rate_pause" type="checkbox" value="true" checked={p.return_rate_pause} aria-describedby="return_rate_pause-help" />{' '}
              Pause ACH collection on a return-rate breach
            </label>
            <small id="return_rate_pause-help">
              Nacha return-rate thresholds: while any class below is at or above its threshold over 60 days, no new ACH debit is made; collection resumes by itself once
              every class is back under. Card payments are not paused.
            </small>
          </fieldset>
          <button type="submit">Save rules</button>
        </form>
      </section>
      <section aria-labelledby="rates">
        <h2 id="rates">Return rates</h2>
        <p>
          Over the last 60 days: {count(r.debits)} ACH debits. Collection is {r.paused ? <strong>paused by the rules</strong> : 'not paused'}.
        </p>
        <RatesChart id="rules-rates" debits={r.debits} rates={(['unauthorized', 'administrative', 'overall'] as const).map((k) => ({ name: CLASS_LABELS[k], ...r.rates[k] }))} />
        <Table
          caption="What each class counts"
          headers={['Class', 'Return codes', 'Threshold']}
          rows={(['unauthorized', 'administrative', 'overall'] as const).map((k) => [CLASS_LABELS[k], CODES[k], percent(r.rates[k].threshold)])}
        />
        <Table
          caption="Returns by code over the last 60 days"
          headers={['Code', 'Returns']}
          rows={Object.entries(r.by_code).map(([code, n]) => [code, count(n)])}
          empty="No return in the last 60 days."
        />
      </section>
    </>
  );
}

export const rulesPages = (deps: Deps) => {
  const render = (s: PortalSession, message: Message = null, status = 200) => {
    const view = viewOf(deps, s, HERE);
    return page(view, 'Collection rules', <RulesContent deps={deps} s={s} message={message} csrf={view.user.csrf} now={view.now} />, status);
  };
  return new Elysia({ name: 'portal-rules' })
    .use(portalSession(deps))
    .get(HERE, ({ session }) => render(session), { signedIn: true, detail: { hide: true } })
    .post(
      HERE,
      async ({ session, body }) => {
        const raw = (body ?? {}) as Record<string, unknown>;
        try {
          // An unchecked box is not sent: it is false. Every field is sent, so the form is the whole policy.
          const input = formOf(PolicyPatch, {
            cfpb_covered: raw.cfpb_covered === 'true',
            max_reinitiations: whole(raw.max_reinitiations),
            reinitiation_amount: raw.reinitiation_amount,
            notice_days: whole(raw.notice_days),
            return_rate_pause: raw.return_rate_pause === 'true',
            read_cadence: raw.read_cadence,
            debit_buffer_cents: whole(raw.debit_buffer_cents, 8),
            late_return_window_days: whole(raw.late_return_window_days),
            allow_current_balance: raw.allow_current_balance === 'true',
            current_balance_buffer_cents: whole(raw.current_balance_buffer_cents, 8),
            max_balance_age_minutes: whole(raw.max_balance_age_minutes, 4),
            apply_notifications_of_change: raw.apply_notifications_of_change,
            require_account_validation: raw.require_account_validation === 'true',
            // An empty box is UTC.
            time_zone: typeof raw.time_zone === 'string' && raw.time_zone.trim() !== '' ? raw.time_zone.trim() : null,
            notice_channel: raw.notice_channel === SELF ? null : raw.notice_channel,
            reg_e_election: electionOf(raw),
          });
          await updatePolicy({ ctx: { lender: session.lender, deps }, input });
          return render(session, { kind: 'ok', text: 'Collection rules saved.' });
        } catch (e) {
          return render(session, { kind: 'error', text: problemOf(e) }, 400);
        }
      },
      { signedIn: true, detail: { hide: true } },
    );
};
