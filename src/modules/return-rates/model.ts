import { t } from 'elysia';
import { Int } from '../../platform/schema';

const Rate = t.Object({
  returns: Int(),
  rate: t.Number({ description: 'returns ÷ debits, unrounded; with no debits in the window, 0 without returns and 1 with any (then the status is exceeded)' }),
  threshold: t.Number(),
  status: t.Union([t.Literal('ok'), t.Literal('warning'), t.Literal('exceeded')], { description: 'ok below 80% of the threshold, warning from 80%, exceeded at or above it; exceeded too when the window has returns and no debits' }),
});

export const ReturnRatesQuery = t.Object({
  window_days: t.Optional(t.Integer({ minimum: 1, maximum: 120, default: 60, description: 'The window, ending now: 1 to 120 days (default 60)' })),
});

export const ReturnRates = t.Object(
  {
    window: t.Object({ from: t.String({ format: 'date-time' }), to: t.String({ format: 'date-time' }), days: Int() }),
    debits: Int({ description: "The lender's ACH debits that went to the bank in the window" }),
    rates: t.Object({ unauthorized: Rate, administrative: Rate, overall: Rate }),
    by_code: t.Record(t.String(), Int(), { description: 'Returns in the window by return code (a return without a code counts in overall only)' }),
    paused: t.Boolean({ description: 'Whether the pause on breach is in force: the collection policy has return_rate_pause and a class is exceeded over the last 60 days (whatever window_days asks for)' }),
  },
  {
    examples: [
      {
        window: { from: '2026-09-25T12:00:00.000Z', to: '2026-11-24T12:00:00.000Z', days: 60 },
        debits: 230,
        rates: {
          unauthorized: { returns: 2, rate: 0.0087, threshold: 0.005, status: 'exceeded' },
          administrative: { returns: 8, rate: 0.0348, threshold: 0.03, status: 'exceeded' },
          overall: { returns: 30, rate: 0.1304, threshold: 0.15, status: 'warning' },
        },
        by_code: { R01: 20, R02: 8, R10: 2 },
        paused: false,
      },
    ],
  },
);
