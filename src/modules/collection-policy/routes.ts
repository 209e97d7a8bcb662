import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import type { Auth } from '../../http/auth';
import { schemaBody } from '../../http/body';
import { errors } from '../../http/errors';
import { maturity } from '../../http/maturity';
import { Policy, PolicyPatch } from './model';
import { getPolicy, updatePolicy } from './service';

const tags = ['Payments'];

export const collectionPolicyRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/collection_policy', normalize: false })
    .use(auth)
    .get('', ({ lender }) => getPolicy({ ctx: { lender, deps } }), {
      auth: true,
      response: { 200: Policy, ...errors(401, 429) },
      detail: {
        tags,
        summary: 'The collection policy',
        ...maturity(
          'Early Access',
          'The rules beyond the defaults that bound every automatic debit of the lender: the CFPB payday rule (two ' +
            'consecutive failures for funds stop collection until the borrower authorizes again), how many ' +
            'reinitiations follow an R01/R09 return (at most two; none later than 180 days after the original), and ' +
            'the amount a reinitiation carries, when monitored borrowers are read (around their paydays, at 08:00 in ' +
            'the lender’s time zone, or on the fixed interval) and the buffer a balance must hold above a debit. ' +
            'Every field has its default until changed.',
        ),
      },
    })
    .patch('', ({ lender, body }) => updatePolicy({ ctx: { lender, deps }, input: body }), {
      auth: true,
      ...schemaBody(PolicyPatch),
      response: { 200: Policy, ...errors(400, 401, 413, 415, 429) },
      detail: {
        tags,
        summary: 'Change the collection policy',
        ...maturity(
          'Early Access',
          'At least one field; unknown fields and values out of range are 400, naming the field (a time_zone must be ' +
            'an IANA name the service knows, and is stored in its canonical spelling; null sets UTC). The fields sent ' +
            'change; the next collection decision of every borrower reads them, and the next read of each borrower ' +
            'is timed by them.',
        ),
      },
    });
