import { Elysia, t } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import { documentedBody, schemaBody } from '../../http/body';
import type { Auth } from '../../http/auth';
import { AuthorizerId } from '../authorizers/fields';
import { BankLinkCheckResponse, EnrollmentBody, EnrollmentList, EnrollmentListQuery, EnrollmentRequest, EnrollmentResponse, EnrollmentView, ErasureResponse, IdsBody, RemovalResponse } from './model';
import { checkBankLink, enroll, eraseBorrowers, getEnrollment, listEnrollments, removeEnrollments } from './service';
import { readBorrowerNow } from './read-now';

const ReadNowResponse = t.Object(
  {
    authorizer_unique_id: t.String(),
    batch_id: t.String({ description: 'The read’s batch (source monitoring): its result is in /v1/balances?batch_id=… and the borrower’s last_read' }),
    submitted_at: t.String({ format: 'date-time' }),
    next_read_at: t.String({ format: 'date-time', description: 'The next regular read, one interval after this one' }),
  },
  { examples: [{ authorizer_unique_id: 'loan-1001', batch_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b', submitted_at: '2026-11-21T10:00:00.000Z', next_read_at: '2026-11-21T14:00:00.000Z' }] },
);

const tags = ['Payments'];
const early = (description: string) => maturity('Early Access', description);
/** 1000 borrowers with every optional field stay well under this. */
const ENROLLMENT_BODY_LIMIT = 4 * 1024 * 1024;

export const enrollmentRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1', normalize: false })
    .use(auth)
    .post(
      '/payment_enrollments',
      async ({ lender, body, set }) => {
        const res = await enroll({ ctx: { lender, deps }, input: { body } });
        set.status = 207;
        return res;
      },
      {
        auth: true,
        ...schemaBody(EnrollmentRequest, { limit: ENROLLMENT_BODY_LIMIT }),
        response: { 207: EnrollmentResponse, ...errors(400, 401, 413, 415, 429) },
        detail: {
          // Documented with every borrower's fields; the route checks the list and each identifier (EnrollmentRequest).
          ...documentedBody(EnrollmentBody, 'application/json'),
          tags,
          summary: 'Enroll borrowers for collection',
          ...early(
            'Upsert of up to 1000 borrowers (`{borrowers: [...]}`); 207 with one result per borrower in request order. ' +
              'enrolled: stored, monitoring started (30-day window, first balance read at once). updated: already ' +
              'monitored; details refreshed, merchant_ref and charge_instrument replaced (omitting it moves a card ' +
              'borrower back to ACH), the amount applied to the next payment, the window not extended; also for an ' +
              'unchanged re-send. held: stored, not monitored (unresolvable_routing_number, institution_not_supported); ' +
              'monitoring starts by itself when the bank becomes readable. failed: not stored (duplicate_in_request on ' +
              'every copy, tokenization_failed naming the field, card_tokenization_failed, chunk_failed when the ' +
              'processor could not be reached: send again). A borrower that is not an object, or whose ' +
              'authorizer_unique_id is missing or not 1 to 255 characters of well-formed Unicode without control ' +
              'characters, makes the request malformed: 400 naming it (borrowers/<index>/authorizer_unique_id). A lapsed, removed, stopped or collected borrower sent again ' +
              'starts fresh. Raw cards are tokenized at the processor key that takes the borrower’s card payments; the ' +
              'number is never stored. monitor_open_failed is in the schema but never produced: storing and opening ' +
              'the monitor are one transaction. already_enrolled is always 0. Each enrolled or updated borrower then has the ' +
              'last 90 days of its account’s transactions read once, outside the request, where its source keeps them (a ' +
              'bank_link at Plaid or Stripe Financial Connections, the HTTP provider’s /transactions, the sandbox’s 9997 ' +
              'accounts): its pay_cycle is learned from them (source transactions).',
          ),
        },
      },
    )
    .delete('/payment_enrollments', ({ lender, body }) => removeEnrollments({ ctx: { lender, deps }, input: { body } }), {
      auth: true,
      ...schemaBody(IdsBody),
      response: { 200: RemovalResponse, ...errors(400, 401, 413, 415, 429) },
      detail: {
        tags,
        summary: 'Stop monitoring borrowers',
        ...early(
          '`{authorizer_unique_ids: [...]}` (1 to 1000); an identifier that is not well-formed Unicode or holds control ' +
            'characters is a 400 naming it. removed: monitoring stopped by this request (a collected borrower too, so that ' +
            'a late return of its payment does not bring it back); no new payment is initiated after this call returns. ' +
            'not_monitored: known but neither monitored nor collected (also on a retry). ' +
            'unknown: no record (another lender’s borrower included). Details and history are kept.',
        ),
      },
    })
    .delete('/persisted_authorizers', ({ lender, body }) => eraseBorrowers({ ctx: { lender, deps }, input: { body } }), {
      auth: true,
      ...schemaBody(IdsBody),
      response: { 200: ErasureResponse, ...errors(400, 401, 413, 415, 429) },
      detail: {
        tags,
        summary: 'Erase borrowers’ stored details',
        ...early(
          '`{authorizer_unique_ids: [...]}` (1 to 1000), as removal. Stops monitoring as removal does and erases the borrowers’ personal data and card tokens (overwritten, not ' +
            'just unlinked), and the income deposits read from their transactions. Payment events and the ledger are kept.',
        ),
      },
    })
    .get('/payment_enrollments', ({ lender, query }) => listEnrollments({ ctx: { lender, deps }, input: query }), {
      auth: true,
      query: EnrollmentListQuery,
      response: { 200: EnrollmentList, ...errors(400, 401, 429) },
      detail: { tags, summary: 'List enrollments', ...early('By authorizer_unique_id, optionally filtered by state; paginated.') },
    })
    .get(
      '/payment_enrollments/:authorizer_unique_id',
      ({ lender, params }) => getEnrollment({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id } }),
      {
        auth: true,
        params: t.Object({ authorizer_unique_id: AuthorizerId }),
        response: { 200: EnrollmentView, ...errors(401, 404, 429) },
        detail: {
          tags,
          summary: 'Read an enrollment',
          ...early(
            'State, reason, blocked_reason, the monitoring window, the amount, the instrument (bank name or card brand, ' +
              'last four), the bank account an ACH borrower is linked to (bank_account_id), the last balance read, payments ' +
              'used and the ledger; amounts in cents, no personal data. ' +
              'Another lender’s borrower is 404; an identifier that is not well-formed or holds control characters is 400.',
          ),
        },
      },
    )
    .post(
      '/payment_enrollments/:authorizer_unique_id/read',
      async ({ lender, params, set }) => {
        const res = await readBorrowerNow({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id } });
        set.status = 202;
        return res;
      },
      {
        auth: true,
        params: t.Object({ authorizer_unique_id: AuthorizerId }),
        response: { 202: ReadNowResponse, ...errors(400, 401, 404, 409, 429) },
        detail: {
          tags,
          summary: 'Read a borrower’s balance now',
          ...early(
            'Queues a balance read of a monitored borrower now instead of at next_read_at; its result is handled as every ' +
              'monitoring read is (set on the enrollment, then collection decides, and webhooks follow). The next regular ' +
              'read is one interval after this one. 409 when the borrower is not monitored or its data was erased. Bounded ' +
              'per lender: 20 schedule runs and borrower reads on demand at once, then one every 3 seconds (429 with ' +
              'Retry-After). Another lender’s borrower is 404.',
          ),
        },
      },
    )
    .post(
      '/payment_enrollments/:authorizer_unique_id/bank_link/check',
      ({ lender, params }) => checkBankLink({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id } }),
      {
        auth: true,
        params: t.Object({ authorizer_unique_id: AuthorizerId }),
        response: { 200: BankLinkCheckResponse, ...errors(400, 401, 404, 409, 429, 503) },
        detail: {
          tags,
          summary: 'Check a borrower’s linked account now',
          ...early(
            'Asks the provider about the borrower’s bank_link now with its free call (Plaid /item/get and /accounts/get, ' +
              'Stripe’s account retrieve; no balance is read and nothing is billed), records what it says and answers the ' +
              'link’s health. When the provider says a link that needed the borrower is well again (the same token, the same ' +
              'account, after Plaid’s update mode or Stripe’s relink), its episode closes: BANK_LINK_REPAIRED goes out, a ' +
              'borrower blocked by it is unblocked, and it is read at once. 409 without a bank_link, after erasure, or without a ' +
              'connection for its provider; 503 when the provider cannot be asked now (nothing changed). Another lender’s borrower is 404.',
          ),
        },
      },
    );
