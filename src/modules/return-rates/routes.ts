import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import type { Auth } from '../../http/auth';
import { errors } from '../../http/errors';
import { maturity } from '../../http/maturity';
import { ReturnRates, ReturnRatesQuery } from './model';
import { returnRates } from './service';

export const returnRateRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/return_rates', normalize: false }).use(auth).get(
    '',
    ({ lender, query }) => returnRates({ ctx: { lender, deps }, input: { windowDays: query.window_days ?? 60 } }),
    {
      auth: true,
      query: ReturnRatesQuery,
      response: { 200: ReturnRates, ...errors(400, 401, 429) },
      detail: {
        tags: ['Payments'],
        summary: 'ACH return rates against Nacha’s thresholds',
        ...maturity(
          'Early Access',
          'Over the window ending now: debits are the ACH debits that went to the bank (the service’s own payments ' +
            'that reached the processor, by when they first did, and uploaded results other than pending, voided, invalid ' +
            'and not_attempted, by submitted_at; uploaded results count as ACH). Returns are returned and late-returned ACH ' +
            'debits whose return date is in the window, once per reference, classed by code: unauthorized (R05, R07, R10, ' +
            'R11, R29, R51; threshold 0.5%), administrative (R02, R03, R04; 3%), overall (every return, one without a code ' +
            'too; 15%). Card payments are not counted.',
        ),
      },
    },
  );
