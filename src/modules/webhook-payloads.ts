import { t, type TSchema } from 'elysia';
import { RATE_STATUSES, type WebhookType } from '../../db/schema/enums';
import { Int, OneOf } from '../platform/schema';
import { PaymentEvent } from './collection/model';
import { BankLinkView } from './authorizers/fields';
import { BLOCKED_REASONS } from './enrollments/monitor';
import { AccountChangeFields } from './bank-accounts/model';
import { RIGHTS_NOTICE_DUE_EXAMPLE, RightsNoticeDueFields } from './rights-notices/model';
import { PAYMENT_NOTICE_DUE_EXAMPLE, PaymentNoticeDueFields } from './collection/model';
import { FRAUD_ALERT_RAISED_EXAMPLE, FraudAlertRaisedFields } from './fraud-monitoring/model';

// What each webhook the service sends carries, for the OpenAPI document's `webhooks` section. Every delivery
// is a POST signed with Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature). The payloads are
// the sending features' (a payment event is collection's), so the table sits above them, beside the features'
// index, and the webhooks feature (the outbox and its delivery) knows none of them.

const base = (type: WebhookType) => ({
  event_uuid: t.String({ format: 'uuid', description: 'Unique per delivery; the webhook-id header too' }),
  type: t.Literal(type),
});

/** A Notification of Change as its events carry it (GET /v1/bank_accounts/{id} lists them the same). */
const CHANGE_FIELDS = AccountChangeFields;
const CHANGE_EXAMPLE = {
  bank_account_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b',
  change_id: '019a4f40-1111-7b2a-9f00-1c2d3e4f5a6b',
  code: 'C01',
  source: 'upload',
  reference: 'DRS-loan-1001-019a4f3e-90aa-7c11-8e22-3344556677aa',
  old_last4: '4567',
  new_last4: '9012',
  status: 'received',
  received_at: '2026-11-24T15:02:11.000Z',
  due_by: '2026-12-02T23:59:59.999Z',
  applied_at: null,
  applied_by: null,
};

const payloads: Record<WebhookType, { summary: string; schema: TSchema }> = {
  BALANCE_BATCH_COMPLETED: {
    summary: 'A balance batch finished (the webhook_url of the batch or schedule)',
    schema: t.Object({ ...base('BALANCE_BATCH_COMPLETED'), batch_id: t.String(), schedule_id: t.Optional(t.String()) }),
  },
  BALANCE_THRESHOLD_ALERT: {
    summary: 'Balances of a schedule run met their threshold_amount (the schedule’s webhook)',
    schema: t.Object({
      ...base('BALANCE_THRESHOLD_ALERT'),
      schedule_id: t.String(),
      batch_id: t.String(),
      alerts: t.Array(t.Object({ authorizer_unique_id: t.String(), institution_name: t.Union([t.String(), t.Null()]), balance: t.Number({ description: 'Dollars' }), threshold_amount: t.Number({ description: 'Dollars' }) })),
      timestamp: t.String({ format: 'date-time' }),
    }),
  },
  PAYMENT_EVENT: {
    summary: 'A payment event read from a processor, exactly as GET /v1/payment_events shows it (lender endpoints)',
    schema: t.Object({ ...base('PAYMENT_EVENT'), payment_event: PaymentEvent }),
  },
  RETURN_RATE_ALERT: {
    summary: 'A return-rate class changed status over the last 60 days (lender endpoints)',
    schema: t.Object(
      {
        ...base('RETURN_RATE_ALERT'),
        class: t.Union([t.Literal('unauthorized'), t.Literal('administrative'), t.Literal('overall')]),
        status: OneOf(RATE_STATUSES, { description: 'The new status' }),
        rate: t.Number({ description: 'returns ÷ debits, unrounded' }),
        threshold: t.Number(),
        returns: Int(),
        debits: Int(),
        window_days: Int(),
      },
      { examples: [{ event_uuid: '3f1c0f2e-5a4b-4c1d-9e8f-0a1b2c3d4e5f', type: 'RETURN_RATE_ALERT', class: 'administrative', status: 'exceeded', rate: 0.0348, threshold: 0.03, returns: 8, debits: 230, window_days: 60 }] },
    ),
  },
  ENROLLMENT_BLOCKED: {
    summary: 'A borrower’s collection stopped, or waits on the lender (lender endpoints)',
    schema: t.Object({
      ...base('ENROLLMENT_BLOCKED'),
      authorizer_unique_id: t.String(),
      state: t.String({ description: 'The monitor state: stopped, or monitored with a blocked_reason' }),
      reason: t.Union([t.String(), t.Null()], { description: 'Why it stopped (a return code, invalid, a decline code)' }),
      blocked_reason: t.Union([OneOf(BLOCKED_REASONS), t.Null()], {
        description: 'Why no payment is initiated (the enrollment’s blocked_reason), among them the bank account’s: account_invalid, account_frozen, account_unauthorized, account_deceased, account_change_pending, validation_required',
      }),
    }),
  },
  BANK_LINK_RELINK_REQUIRED: {
    summary:
      'A borrower’s linked account needs the borrower before it is read or debited again (lender endpoints): once per episode, from the provider saying so until it says the same link is well again (BANK_LINK_REPAIRED)',
    schema: t.Object({
      ...base('BANK_LINK_RELINK_REQUIRED'),
      authorizer_unique_id: t.String(),
      bank_link: BankLinkView,
      health: t.Union([t.Literal('relink_required'), t.Literal('revoked'), t.Literal('closed'), t.Literal('not_transactable')], {
        description: 'relink_required: the borrower must sign in again (same link once repaired); revoked: the borrower revoked the account or permission; closed: closed at the bank; not_transactable: its account number cannot be debited',
      }),
      since: t.String({ format: 'date-time' }),
      batch_id: t.Union([t.String(), t.Null()], { description: 'The balance batch whose read found it; null when a probe did' }),
    }),
  },
  BANK_LINK_REPAIRED: {
    summary: 'The provider says a borrower’s linked account is well again (the same link): reads, and so collection, go on by themselves (lender endpoints); once per episode',
    schema: t.Object({
      ...base('BANK_LINK_REPAIRED'),
      authorizer_unique_id: t.String(),
      bank_link: t.Union([BankLinkView, t.Null()]),
      was: t.String({ description: 'The health the episode had: relink_required, revoked, closed or not_transactable' }),
      since: t.String({ format: 'date-time' }),
    }),
  },
  BANK_LINK_EXPIRING: {
    summary: 'A borrower’s consent to a linked account ends soon (the provider’s date): a warning, the link is still read (lender endpoints); once per episode',
    schema: t.Object({
      ...base('BANK_LINK_EXPIRING'),
      authorizer_unique_id: t.String(),
      bank_link: BankLinkView,
      expires_at: t.Union([t.String({ format: 'date-time' }), t.Null()]),
    }),
  },
  ACCOUNT_CHANGE_NOTIFIED: {
    summary:
      'A Notification of Change on one of the lender’s bank accounts was received (lender endpoints): from now no debit goes to the account until it is applied (at once under the policy’s automatic; under review when the lender applies it, by due_by)',
    schema: t.Object({ ...base('ACCOUNT_CHANGE_NOTIFIED'), ...CHANGE_FIELDS }, { examples: [{ event_uuid: '3f1c0f2e-5a4b-4c1d-9e8f-0a1b2c3d4e5f', type: 'ACCOUNT_CHANGE_NOTIFIED', ...CHANGE_EXAMPLE }] }),
  },
  ACCOUNT_CORRECTED: {
    summary: 'A Notification of Change was applied: every borrower on the account has the corrected details, and the next debit carries them (lender endpoints)',
    schema: t.Object(
      { ...base('ACCOUNT_CORRECTED'), ...CHANGE_FIELDS },
      { examples: [{ event_uuid: '7a1c0f2e-5a4b-4c1d-9e8f-0a1b2c3d4e5f', type: 'ACCOUNT_CORRECTED', ...CHANGE_EXAMPLE, status: 'applied', applied_at: '2026-11-24T15:02:16.000Z', applied_by: 'automatic' }] },
    ),
  },
  RIGHTS_NOTICE_DUE: {
    summary:
      'A covered borrower’s second consecutive attempt failed for funds (CFPB payday rule): the consumer-rights notice (12 CFR 1041.9(c)) is due by due_by; record its sending with POST /v1/payment_enrollments/{authorizer_unique_id}/rights_notice (lender endpoints)',
    schema: t.Object(
      { ...base('RIGHTS_NOTICE_DUE'), ...RightsNoticeDueFields },
      { examples: [{ event_uuid: '5b2c0f2e-5a4b-4c1d-9e8f-0a1b2c3d4e5f', type: 'RIGHTS_NOTICE_DUE', ...RIGHTS_NOTICE_DUE_EXAMPLE }] },
    ),
  },
  PAYMENT_NOTICE_DUE: {
    summary:
      'A payment needs a notice before it goes out (docs/payments.md, Payment notices): the CFPB payday rule’s first-payment, unusual-withdrawal or reinitiation notice (12 CFR 1041.9(b)), Regulation E’s varying-amount notice (12 CFR 1005.10(d)), or both in one. Send it between notice_due_from and notice_due_by and confirm it with POST /v1/payments/{payment_id}/notice; without that the payment is voided and planned again (lender endpoints)',
    schema: t.Object(
      { ...base('PAYMENT_NOTICE_DUE'), ...PaymentNoticeDueFields },
      { examples: [{ event_uuid: '6d2c0f2e-5a4b-4c1d-9e8f-0a1b2c3d4e5f', type: 'PAYMENT_NOTICE_DUE', ...PAYMENT_NOTICE_DUE_EXAMPLE }] },
    ),
  },
  FRAUD_ALERT_RAISED: {
    summary:
      'A fraud-monitoring rule raised an alert (GET /v1/fraud_alerts/{alert_id}): dispose of it with POST /v1/fraud_alerts/{alert_id}/disposition; a hold rule’s alert keeps the borrower’s debits until it is cleared (lender endpoints)',
    schema: t.Object(
      { ...base('FRAUD_ALERT_RAISED'), ...FraudAlertRaisedFields },
      { examples: [{ event_uuid: '6c3d0f2e-5a4b-4c1d-9e8f-0a1b2c3d4e5f', type: 'FRAUD_ALERT_RAISED', ...FRAUD_ALERT_RAISED_EXAMPLE }] },
    ),
  },
  PAYMENT_SCHEDULED: {
    summary: 'A payment scheduled after the policy’s notice period: tell the borrower before debit_on (lender endpoints)',
    schema: t.Object({ ...base('PAYMENT_SCHEDULED'), authorizer_unique_id: t.String(), reference: t.String(), amount: Int({ description: 'Cents' }), debit_on: t.String({ format: 'date' }) }),
  },
};

/** The OpenAPI 3.1 `webhooks` object: one POST per type, its body the payload. */
export function webhookDocuments(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(payloads).map(([type, p]) => [
      type,
      {
        post: {
          operationId: `webhook${type.toLowerCase().replace(/(^|_)(\w)/g, (_m, _s, c: string) => c.toUpperCase())}`,
          summary: p.summary,
          description: 'Sent by the service to the receiver, signed with the lender’s webhook secret (Standard Webhooks headers webhook-id, webhook-timestamp, webhook-signature): verify it before trusting the body',
          tags: ['Webhooks'],
          // Not a call to the service: the receiver authenticates the sender by the signature.
          security: [],
          requestBody: { required: true, content: { 'application/json': { schema: JSON.parse(JSON.stringify(p.schema)) } } },
          responses: { '2XX': { description: 'Received; any other answer, or none within the timeout, is retried' } },
        },
      },
    ]),
  );
}
