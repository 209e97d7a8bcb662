import { Elysia, t } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import type { Auth } from '../../http/auth';
import { listPaymentEvents } from './events';
import { EventList } from './model';
import { identifierSchema } from '../../platform/fields';


export const paymentEventRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1', normalize: false }).use(auth).get(
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
  );
