// Every enumerated value the service stores, defined once. The Drizzle column enums, the TypeBox schemas
// (platform/schema.ts `OneOf`) and the TypeScript types all derive from these arrays.

export const PAYMENT_TYPES = ['ACCOUNT_NUMBER', 'DEBIT_CARD'] as const;
export type PaymentType = (typeof PAYMENT_TYPES)[number];

export const BATCH_SOURCES = ['api', 'csv', 'schedule', 'monitoring'] as const;
export type BatchSource = (typeof BATCH_SOURCES)[number];

export const BATCH_STATUSES = ['pending', 'processing', 'completed'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** A queue row of a lease queue: waiting (or leased) work, or finished. */
export const ITEM_STATES = ['pending', 'done'] as const;
export type ItemState = (typeof ITEM_STATES)[number];

export const EXPORT_STATUSES = [
  'SUCCESS',
  'NO_MATCH',
  'ACCOUNT_CLOSED',
  'BANK_UNSUPPORTED',
  'RETRIEVAL_FAILED',
  'RETRY_LIMIT',
  'PROCESSING_ERROR',
] as const;
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

export const SCHEDULE_STATUSES = ['ACTIVE', 'COMPLETED', 'DISABLED'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];

/** What a lender's webhook endpoint can subscribe to. */
export const ENDPOINT_EVENT_TYPES = [
  'PAYMENT_EVENT',
  'RETURN_RATE_ALERT',
  'ENROLLMENT_BLOCKED',
  'PAYMENT_SCHEDULED',
  'BANK_LINK_RELINK_REQUIRED',
  'BANK_LINK_REPAIRED',
  'BANK_LINK_EXPIRING',
  'ACCOUNT_CHANGE_NOTIFIED',
  'ACCOUNT_CORRECTED',
  'RIGHTS_NOTICE_DUE',
  'PAYMENT_NOTICE_DUE',
  'FRAUD_ALERT_RAISED',
] as const;
export type EndpointEventType = (typeof ENDPOINT_EVENT_TYPES)[number];

export const WEBHOOK_TYPES = ['BALANCE_BATCH_COMPLETED', 'BALANCE_THRESHOLD_ALERT', ...ENDPOINT_EVENT_TYPES] as const;
export type WebhookType = (typeof WEBHOOK_TYPES)[number];

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** The spec's payment event statuses. */
export const EVENT_STATUSES = [
  'processing',
  'settled',
  'returned',
  'late_returned',
  'invalid',
  'voided',
  'refunded',
  'not_attempted',
] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

/** The payment types a borrower is debited on. */
export const RAILS = ['ach', 'card'] as const;
export type Rail = (typeof RAILS)[number];

/** What a processor key is used for: one rail, or both. */
export const RAIL_SCOPES = ['ach', 'card', 'both'] as const;
export type RailScope = (typeof RAIL_SCOPES)[number];

export const PROCESSOR_NAMES = ['sandbox', 'stripe'] as const;
export type ProcessorName = (typeof PROCESSOR_NAMES)[number];

/** Where a lender's linked accounts are read: Plaid (Balance) or Stripe Financial Connections. */
export const BANK_DATA_PROVIDERS = ['plaid', 'stripe'] as const;
export type BankDataProvider = (typeof BANK_DATA_PROVIDERS)[number];

export const PLAID_ENVIRONMENTS = ['sandbox', 'production'] as const;
export type PlaidEnvironment = (typeof PLAID_ENVIRONMENTS)[number];

/** Which balance a read reports: the available balance, or the current (ledger) one when none is available. */
export const BALANCE_KINDS = ['available', 'current'] as const;
/**
 * A linked account's health as its provider last said: ok; relink_required (the borrower must sign in again);
 * expiring (consent ends soon, still read); revoked (the borrower revoked the account or the permission: no new
 * debit); closed (closed at the bank); not_transactable (the account number a debit would use is not usable).
 */
export const LINK_HEALTHS = ['ok', 'relink_required', 'expiring', 'revoked', 'closed', 'not_transactable'] as const;
export type LinkHealth = (typeof LINK_HEALTHS)[number];
export type BalanceKind = (typeof BALANCE_KINDS)[number];

/** A borrower's monitor (payments.md, Monitor states). */
export const MONITOR_STATES = ['monitored', 'held', 'collected', 'lapsed', 'removed', 'stopped'] as const;
export type MonitorState = (typeof MONITOR_STATES)[number];

export const HELD_REASONS = ['unresolvable_routing_number', 'institution_not_supported'] as const;
export type HeldReason = (typeof HELD_REASONS)[number];

/** A payment's status: the event statuses, and `initiating` before the processor has answered. */
/** `scheduled` while a notice runs (it is sent on its debit_on); `initiating` until the processor answers. */
export const PAYMENT_STATUSES = ['scheduled', 'initiating', ...EVENT_STATUSES] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/** Where a payment event was observed. */
/** `service`: a payment the service ended itself before it reached a processor (a scheduled payment voided). */
export const EVENT_SOURCES = ['processor', 'upload', 'service'] as const;
export type EventSource = (typeof EVENT_SOURCES)[number];

/** A borrower's pay cycle (pay-cycles/infer.ts). */
export const PAY_FREQUENCIES = ['weekly', 'biweekly', 'semimonthly', 'monthly', 'irregular', 'unknown'] as const;
export type PayFrequency = (typeof PAY_FREQUENCIES)[number];

/** What a pay cycle was learned from: the borrower's balance reads, or a linked account's transactions. */
export const PAY_CYCLE_SOURCES = ['balances', 'transactions'] as const;
export type PayCycleSource = (typeof PAY_CYCLE_SOURCES)[number];

/** When a monitored borrower is read: around predicted paydays, or on the fixed interval. */
export const READ_CADENCES = ['payday', 'interval'] as const;
export type ReadCadence = (typeof READ_CADENCES)[number];

export const LEDGER_KINDS = ['credit', 'reversal'] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

/** What a reinitiation carries: the collectable amount current then (the spec's rule), or the returned payment's. */
export const REINITIATION_AMOUNTS = ['current', 'original'] as const;
export type ReinitiationAmount = (typeof REINITIATION_AMOUNTS)[number];

/** A return-rate class against its Nacha threshold: below 80% of it, from 80%, at or above it. */
export const RATE_STATUSES = ['ok', 'warning', 'exceeded'] as const;
export type RateStatus = (typeof RATE_STATUSES)[number];

/**
 * A bank account's state, set by the returns of any borrower's debits to it (adapters/processors/account-states.ts):
 * ok; invalid (closed, no account, an invalid number or routing, a non-transaction account, sold); frozen;
 * unauthorized (its holder said a debit was not authorized, or revoked the authorization); deceased.
 */
export const BANK_ACCOUNT_STATES = ['ok', 'invalid', 'frozen', 'unauthorized', 'deceased'] as const;
export type BankAccountState = (typeof BANK_ACCOUNT_STATES)[number];

/** What an account number or routing number is of: a checking or a savings account (Nacha's transaction codes 27 and 37). */
export const ACCOUNT_TYPES = ['checking', 'savings'] as const;
export type AccountType = (typeof ACCOUNT_TYPES)[number];

/**
 * How a bank account was validated before its first debit (Nacha's WEB debit rule): a bank link (Plaid Auth,
 * Stripe Financial Connections, the sandbox), the processor's verified payment method, or the lender's own
 * evidence (a prenote, micro-deposits, a third-party service, other).
 */
export const VALIDATION_METHODS = ['bank_link', 'processor_verified', 'prenote', 'micro_deposits', 'third_party', 'other'] as const;
export type ValidationMethod = (typeof VALIDATION_METHODS)[number];
/** The methods a lender may state on an enrollment entry. */
export const LENDER_VALIDATION_METHODS = ['prenote', 'micro_deposits', 'third_party', 'other'] as const;

/** How a borrower's revocation of its authorization reached the lender. */
export const REVOCATION_CHANNELS = ['written', 'electronic', 'phone', 'in_person', 'other'] as const;
export type RevocationChannel = (typeof REVOCATION_CHANNELS)[number];

/** The Notification of Change codes the service reads (Nacha Operating Rules, Appendix Five). */
export const CHANGE_CODES = ['C01', 'C02', 'C03', 'C05', 'C06', 'C07', 'C09', 'C13'] as const;
export type ChangeCode = (typeof CHANGE_CODES)[number];
/**
 * A Notification of Change as it stands: `review` waits for the lender's confirmation, `received` is to be
 * applied (at once, by the bank-account-changes job), `applied` changed the details of every borrower on the
 * account, `recorded` asked for nothing the service sends (C09, C13).
 */
export const CHANGE_STATUSES = ['received', 'review', 'applied', 'recorded'] as const;
export type ChangeStatus = (typeof CHANGE_STATUSES)[number];
export const CHANGE_SOURCES = ['upload', 'bank_data', 'processor'] as const;
export type ChangeSource = (typeof CHANGE_SOURCES)[number];
/** What a lender's policy does with a Notification of Change: apply it to every borrower on the account, or hold the account's debits until the lender confirms it. */
/**
 * The class of a planned debit, for the notices the payday rule (12 CFR 1041.9) asks before it: the first under
 * an authorization; one on the authorized schedule; an unusual one (its date, amount or channel differs from
 * the schedule: every balance-triggered debit); a reinitiation of a returned one; one the borrower asked for.
 */
export const NOTICE_CLASSES = ['first', 'regular', 'unusual', 'reinitiation', 'consumer_initiated'] as const;
export type NoticeClass = (typeof NOTICE_CLASSES)[number];
/** How a payment notice reaches the borrower: its windows differ (12 CFR 1041.9(b)(2)). */
export const NOTICE_CHANNELS = ['electronic', 'mail'] as const;
export type NoticeChannel = (typeof NOTICE_CHANNELS)[number];
/** How a borrower's new authorization was obtained (12 CFR 1041.8(c)(3)). */
export const AUTHORIZATION_METHODS = ['signed', 'recorded_call', 'electronic'] as const;
export type AuthorizationMethod = (typeof AUTHORIZATION_METHODS)[number];

export const CHANGE_APPLICATIONS = ['automatic', 'review'] as const;
export type ChangeApplication = (typeof CHANGE_APPLICATIONS)[number];

/** How the lender sent a consumer-rights notice (12 CFR 1041.9(c)): electronically, or by mail. */
export const RIGHTS_NOTICE_CHANNELS = ['electronic', 'mail'] as const;
export type RightsNoticeChannel = (typeof RIGHTS_NOTICE_CHANNELS)[number];

/** The fraud-monitoring rules (modules/fraud-monitoring/rules.ts holds what each catches, why, and its settings). */
export const FRAUD_RULES = ['first_debit_unvalidated', 'account_changed', 'shared_account', 'owner_mismatch', 'amount_outlier', 'velocity', 'unauthorized_streak'] as const;
export type FraudRule = (typeof FRAUD_RULES)[number];

/** What a rule's hit does: hold the borrower's debits until the alert is cleared, or only alert. */
export const FRAUD_ACTIONS = ['hold', 'alert'] as const;
export type FraudAction = (typeof FRAUD_ACTIONS)[number];

/** A fraud alert's state: open until the lender disposes of it; needs_info keeps it open (a hold stays) until a final one. */
export const FRAUD_ALERT_STATES = ['open', 'needs_info', 'cleared', 'confirmed_fraud'] as const;
export type FraudAlertState = (typeof FRAUD_ALERT_STATES)[number];

/** A lender's disposition of a fraud alert: cleared and confirmed_fraud are final, needs_info is not. */
export const FRAUD_DISPOSITIONS = ['cleared', 'confirmed_fraud', 'needs_info'] as const;
export type FraudDisposition = (typeof FRAUD_DISPOSITIONS)[number];

/** How the sandbox processor was given an account: bank details, or a token it issued. */
export const SANDBOX_INSTRUMENT_KINDS = ['bank_account', 'token'] as const;

/** The kinds of payment results file a lender uploads. */
export const RESULT_FILE_FORMATS = ['generic', 'annotated_export', 'notifications_of_change'] as const;
export type ResultFileFormat = (typeof RESULT_FILE_FORMATS)[number];
