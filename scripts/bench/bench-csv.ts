// 6. CSV submission of 5000 rows: POST /v1/balance_requests/csv (app.handle, multipart FormData) beside a
// bare csv-parse of the same text. Both warmed up first; medians of several runs.
import { parse } from 'csv-parse/sync';
import { createApp } from '../../src/app';
import { parseBalanceCsv } from '../../src/modules/balance-requests/csv-input';
import { validateAuthorizers } from '../../src/modules/authorizers/rules';
import { insertBatch } from '../../src/modules/balance-requests/service';
import { transaction } from '../../src/platform/context';
import { readCsv } from '../../src/platform/csv';
import type { Bench } from './common';
import { benchRuntime, durability, median, ms, num, SANDBOX_BANK } from './common';

const ROWS = 5000;
const WARMUP = 2;
const RUNS = 9;
const TARGET = 3;

const COLUMNS = [
  'authorizer_unique_id', 'phone_number', 'ssn', 'ein', 'account_number', 'routing_number', 'debit_card_number', 'cvv',
  'expiration_month', 'expiration_year', 'first_name', 'last_name', 'street_address_line1', 'street_address_line2', 'city',
  'state', 'zip_code', 'country', 'date_of_birth', 'meta_branch', 'meta_loan_ref',
];

export function balanceCsv(rows: number, tag: string): string {
  const lines = [COLUMNS.join(',')];
  for (let i = 0; i < rows; i++) {
    lines.push(
      [
        `${tag}-${i}`, '(202) 555-0143', '123-45-6789', '', String(1_000_000_000 + ((i * 7919) % 9_000_000)), SANDBOX_BANK, '', '',
        '', '', 'Ada', i % 10 === 0 ? '"Lovelace, Countess"' : 'Lovelace', `${100 + (i % 900)} Main St`, '', 'Boston', 'MA', '02139',
        'US', '12/10/1985', i % 2 ? 'north' : 'south', `L-${i}`,
      ].join(','),
    );
  }
  return lines.join('\r\n') + '\r\n';
}

/** Timed after a full collection, so garbage left by the other side does not land in this measure. */
function time(fn: () => unknown): number {
  Bun.gc(true);
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

export const csvBench: Bench = {
  name: 'csv',
  title: 'CSV submission of 5000 rows vs bare csv-parse',
  timeoutMs: 120_000,
  async run(ctx) {
    const b = await benchRuntime({});
    ctx.defer(() => b.close());
    const { rt } = b;
    const app = createApp(rt);
    const text = balanceCsv(ROWS, 'csv');
    const bytes = new TextEncoder().encode(text);

    let posted = 0;
    const post = async (): Promise<number> => {
      const form = new FormData();
      // Unique ids per upload (the same file twice is accepted as two batches anyway; this keeps them apart).
      form.append('file', new File([balanceCsv(ROWS, `csv${++posted}`)], 'authorizers.csv', { type: 'text/csv' }));
      const req = new Request('http://localhost/v1/balance_requests/csv', { method: 'POST', headers: { authorization: `Bearer ${b.apiKey}` }, body: form });
      Bun.gc(true);
      const t0 = performance.now();
      const res = await app.handle(req);
      const body = (await res.json()) as { failed_authorizers?: unknown[]; message?: string; error?: { message: string } };
      const elapsed = performance.now() - t0;
      if (res.status !== 201) throw new Error(`CSV upload answered ${res.status}: ${body.error?.message ?? ''}`);
      if (body.failed_authorizers?.length) throw new Error(`${body.failed_authorizers.length} rows failed validation`);
      return elapsed;
    };
    const bare = () => time(() => parse(text));

    for (let i = 0; i < WARMUP; i++) {
      await post();
      bare();
    }
    const endpoint: number[] = [];
    const parsed: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      endpoint.push(await post());
      parsed.push(bare());
    }
    // Where the endpoint's time goes (same file, outside HTTP), for the analysis.
    const readCsvMs = median(Array.from({ length: 5 }, () => time(() => readCsv(text))));
    const parseTimes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await parseBalanceCsv(bytes);
      parseTimes.push(performance.now() - t0);
    }
    const parseBalanceMs = median(parseTimes);
    const { candidates } = await parseBalanceCsv(bytes);
    const validateMs = median(Array.from({ length: 5 }, () => time(() => validateAuthorizers(candidates, { debitCardsApproved: false, now: Date.now() }))));
    const { accepted } = validateAuthorizers(candidates, { debitCardsApproved: false, now: Date.now() });
    const insertTimes: number[] = [];
    for (let i = 0; i < 5; i++) {
      Bun.gc(true);
      const t0 = performance.now();
      await transaction({ deps: rt }, (tx) => insertBatch({ ctx: tx, input: { lenderId: b.lender.id, source: 'csv', authorizers: accepted, now: Date.now() } }));
      insertTimes.push(performance.now() - t0);
    }
    const insertMs = median(insertTimes);

    const e = median(endpoint);
    const p = median(parsed);
    const ratio = e / p;
    ctx.log(`endpoint ${num(e)} ms, bare parse ${num(p)} ms`);
    return {
      metrics: [
        { label: `POST /v1/balance_requests/csv, ${ROWS} rows (${num(bytes.length / 1024, 0)} KB), median of ${RUNS}`, value: ms(e) },
        { label: `csv-parse/sync parse() of the same text, median of ${RUNS}`, value: ms(p) },
        { label: 'endpoint / bare parse', value: `${num(ratio, 2)}×`, target: `≤ ${TARGET}×`, pass: ratio <= TARGET },
      ],
      notes: [
        `endpoint runs ${endpoint.map((x) => num(x, 0)).join(', ')} ms; parse runs ${parsed.map((x) => num(x, 1)).join(', ')} ms.`,
        `breakdown (medians, outside HTTP): readCsv (service options) ${ms(readCsvMs)}, parseBalanceCsv (decode + readCsv + rows) ${ms(parseBalanceMs)}, ` +
          `validateAuthorizers ${ms(validateMs)}, insertBatch (batch row + sealed payload + item list) in one transaction (${await durability(rt)}) ${ms(insertMs)}; ` +
          `the rest (~${ms(Math.max(0, e - parseBalanceMs - validateMs - insertMs), 0)}) is multipart, Elysia, logging and the idempotency check.`,
      ],
    };
  },
};
