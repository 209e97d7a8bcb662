import { Elysia, t } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import type { Auth } from '../../http/auth';
import { listPaymentEvents } from './events';
import { AuthorizationAnswer, AuthorizationBody, AuthorizationList, ConsumerPaymentAnswer, ConsumerPaymentBody, EventList, NoticeSentBody, PaymentNoticeView, RegEElectionAnswer, RegEElectionBody } from './model';
import { createConsumerPayment, listReauthorizations, recordPaymentNotice, recordReauthorization, recordRegEElection } from './authorizations';
import { AccountChangeView, ChangeParams } from '../bank-accounts/model';
import { confirmChange } from './account-changes';
import { revokeAuthorization } from './revocation';
import { RevocationAnswer, RevocationBody } from '../enrollments/model';
import { identifierSchema } from '../../platform/fields';


export const paymentEventRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1', normalize: false })
    .use(auth)
    .get(
    '/payment_events',
    ({ lender, query }) => listPaymentEvents({ ctx: { lender, deps }, input: { authorizerUniqueId: query.authorizer_unique_id } }),
    {
      auth: true,
      query: t.Object({ authorizer_unique_id: identifierSchema('The identifier used at enrollment') }),
      response: { 200: EventList, ...errors(400, 401, 429) },
      detail: {
        tags: ['Payments'],
        summary: 'Payment events of a borrower',
        ...maturity(
          'Early Access',
          "Every observed status of the borrower's payments, oldest first, read from the processor or " +
          'uploaded. One event per new status of a reference; the same processor event read twice records nothing. ' +
          'Nothing expires; re-reading is safe. An unknown borrower (or another lender’s) has an empty list. An ' +
          'identifier that is not well-formed Unicode or holds control characters is 400.',
        ),
      },
    },
  )
    // A borrower's revocation, recorded on the lender's word: here, as it voids a scheduled payment.
    .post(
      '/payment_enrollments/:authorizer_unique_id/revocation',
      ({ lender, params, body }) => revokeAuthorization({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id, body } }),
      {
        auth: true,
        params: t.Object({ authorizer_unique_id: identifierSchema('The identifier used at enrollment') }),
        body: RevocationBody,
        response: { 200: RevocationAnswer, ...errors(400, 401, 404, 429) },
        detail: {
          tags: ['Payments'],
          summary: 'Record a revocation of the borrower’s authorization',
          ...maturity(
            'Early Access',
            'The borrower told the lender to stop its debits (Regulation E, 12 CFR 1005.10(c)): from this request on no payment is created, ' +
              'released or sent for it (a scheduled one is voided; one made and not yet sent is recorded not_attempted), and a monitored ' +
              'borrower shows blocked_reason authorization_revoked, until a re-send brings an authorization.obtained_at after received_at. ' +
              'A payment already sent cannot be recalled. An earlier revocation than the one recorded changes nothing. Another lender’s borrower is 404.',
          ),
        },
      },
    )
    // A Notification of Change applied on the lender's word: here, as applying one corrects the borrowers' details.
    .post('/bank_accounts/:id/changes/:change_id/apply', ({ lender, params }) => confirmChange({ ctx: { lender, deps }, input: { id: params.id, changeId: params.change_id } }), {
      auth: true,
      params: ChangeParams,
      response: { 200: AccountChangeView, ...errors(400, 401, 404, 409, 429) },
      detail: {
        tags: ['Payments'],
        summary: 'Apply a Notification of Change',
        ...maturity(
          'Early Access',
          'Under the policy’s apply_notifications_of_change review, a Notification of Change holds the account’s debits until the lender applies it: ' +
            'every borrower on the account gets the corrected details in this request, and debits go on with them (with validation_required where the ' +
            'policy asks for evidence again after a new number). One not yet applied under automatic is applied now too; one applied or recorded already is a 409.',
        ),
      },
    })
    // Payment notices and authorizations (authorizations.ts): what the lender tells of them binds the debits.
    .post('/payments/:id/notice', ({ lender, params, body }) => recordPaymentNotice({ ctx: { lender, deps }, input: { paymentId: params.id, body } }), {
      auth: true,
      params: t.Object({ id: t.String({ minLength: 1, maxLength: 64, description: 'The payment id (PAYMENT_NOTICE_DUE’s payment_id)' }) }),
      body: NoticeSentBody,
      response: { 200: PaymentNoticeView, ...errors(400, 401, 404, 409, 429) },
      detail: {
        tags: ['Payments'],
        summary: 'Confirm a payment’s notice was sent',
        ...maturity(
          'Early Access',
          'A payment that needs a notice (PAYMENT_NOTICE_DUE: the CFPB payday rule’s first-payment, unusual-withdrawal or reinitiation notice, Regulation E’s varying-amount notice) ' +
            'goes out on its day only with one confirmed here, sent inside its window for the channel it went by (a mail notice’s window is earlier than an electronic one’s). ' +
            'A sent_at outside it is 400 with the window; one that needs none, one confirmed already, or one no longer scheduled is 409. Kept for good. ' +
            'A payment whose window passes without one is voided (not debited) and planned again with a new window.',
        ),
      },
    })
    .post(
      '/payment_enrollments/:authorizer_unique_id/authorizations',
      ({ lender, params, body }) => recordReauthorization({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id, body } }),
      {
        auth: true,
        params: t.Object({ authorizer_unique_id: identifierSchema('The identifier used at enrollment') }),
        body: AuthorizationBody,
        response: { 200: AuthorizationAnswer, ...errors(400, 401, 404, 409, 429) },
        detail: {
          tags: ['Payments'],
          summary: 'Record a new authorization under the payday rule',
          ...maturity(
            'Early Access',
            'After two consecutive failures for funds a covered borrower is debited again only under a new authorization naming the date, the maximum amount and the channel ' +
              'of each further transfer (12 CFR 1041.8(c)). It may be obtained no earlier than the consumer-rights notice was sent (a 409 while the notice is not recorded as sent, ' +
              'or when the borrower owes none) and is dated after a revocation. From then on the borrower’s debits go only on those dates, for at most those amounts, through that ' +
              'channel; a re-send’s authorization.obtained_at no longer lifts the block. A later one replaces it.',
          ),
        },
      },
    )
    .get(
      '/payment_enrollments/:authorizer_unique_id/authorizations',
      ({ lender, params }) => listReauthorizations({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id } }),
      {
        auth: true,
        params: t.Object({ authorizer_unique_id: identifierSchema('The identifier used at enrollment') }),
        response: { 200: AuthorizationList, ...errors(400, 401, 404, 429) },
        detail: {
          tags: ['Payments'],
          summary: 'The borrower’s new authorizations under the payday rule',
          ...maturity('Early Access', 'Every new authorization recorded for the borrower, latest first (at most 100), each kept for good; the first is the one in force. Another lender’s borrower is 404.'),
        },
      },
    )
    .post(
      '/payment_enrollments/:authorizer_unique_id/payments',
      ({ lender, params, body }) => createConsumerPayment({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id, body } }),
      {
        auth: true,
        params: t.Object({ authorizer_unique_id: identifierSchema('The identifier used at enrollment') }),
        body: ConsumerPaymentBody,
        response: { 200: ConsumerPaymentAnswer, ...errors(400, 401, 404, 409, 429) },
        detail: {
          tags: ['Payments'],
          summary: 'Create a payment the borrower asked for',
          ...maturity(
            'Early Access',
            'A single payment the borrower asked for (12 CFR 1041.8(d)): it goes out on its date without a new authorization, whatever the payday rule’s block, and is recorded ' +
              'with notice_class consumer_initiated (it needs no notice). For a monitored borrower with no payment in flight or scheduled and no revocation (409 otherwise), at most ' +
              'the collectable amount, today or later. Its bank account’s state, a removal or a revocation before its day still stop it, as for any debit.',
          ),
        },
      },
    )
    .post(
      '/payment_enrollments/:authorizer_unique_id/reg_e_election',
      ({ lender, params, body }) => recordRegEElection({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id, body } }),
      {
        auth: true,
        params: t.Object({ authorizer_unique_id: identifierSchema('The identifier used at enrollment') }),
        body: RegEElectionBody,
        response: { 200: RegEElectionAnswer, ...errors(400, 401, 404, 429) },
        detail: {
          tags: ['Payments'],
          summary: 'Record the borrower’s Regulation E election',
          ...maturity(
            'Early Access',
            'When a debit whose amount varies needs Regulation E’s written notice, at least 10 days before it (12 CFR 1005.10(d)): always, only outside a range, or only beyond a ' +
              'difference from the last debit. A debit that needs it is scheduled with PAYMENT_NOTICE_DUE. null goes back to the policy’s reg_e_election.',
          ),
        },
      },
    );
