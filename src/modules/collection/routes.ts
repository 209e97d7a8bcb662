import { Elysia, t } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import type { Auth } from '../../http/auth';
import { listPaymentEvents } from './events';
import { EventList } from './model';
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
    });
