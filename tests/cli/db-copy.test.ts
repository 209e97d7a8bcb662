// engine: sqlite — it needs both engines in one run: PostgreSQL from tests/helpers/pg-server.ts, as the contracts get it
// `bun run cli db copy`: a deployment moved from SQLite to PostgreSQL and back. A service builds a database with
// every kind of row through its API and jobs; the copy, run as the operator runs it (a process of its own), is
// served by a service on the other engine, which answers every read as the original did. Then what the copy
// refuses (a target with data, a running source, a vault key that would not open the data), an interrupted copy
// killed mid-table and run again, and a target row altered between the copy and its verification.
import { afterAll, describe, expect, test } from 'bun:test';
import { SQL } from 'bun';
import { Database } from 'bun:sqlite';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestContext, type TestContext } from '../helpers/context';
import { bankAuthorizer, enrollBorrower } from '../helpers/fixtures';
import { cycle, dispatchAndSettle } from '../helpers/collection';
import { signedIn } from '../helpers/portal';
import { contractPgServer, noServerReason } from '../helpers/pg-server';
import { pgUrlOf, psql } from '../helpers/pg';
import { ROOT, ServiceHarness, waitFor } from '../helpers/server';
import { startFakePlaid } from '../fakes/plaid-server';
import { processBalances } from '../../src/modules/balance-requests/processing';
import { deliverDueWebhooks } from '../../src/modules/webhooks/jobs';
import { evaluateAll } from '../../src/modules/return-rates/watch';
import { writeProviderCalls } from '../../src/modules/bank-data-connections/usage';
import { readDueHistories } from '../../src/modules/pay-cycles/history';
import { indexUnsearchedBorrowers } from '../../src/modules/enrollments/search';
import { pollProcessors } from '../../src/modules/collection/poll';
import { applyPgMigrations, knownPgMigrations } from '../../src/platform/pg';
import { openDatabase } from '../../src/platform/db';
import { copyPlan, FILLED_BY_TRIGGERS, PROGRESS_TABLE, schemaTables } from '../../scripts/db-copy';
import { CliError, runCli } from '../../scripts/cli';

const server = contractPgServer();
const VAULT_KEY = randomBytes(32).toString('base64');
const SETTLE = 60_000;
const READ_EVERY = 3_600_000;
const dir = mkdtempSync(join(tmpdir(), 'drs-db-copy-'));
const databases: string[] = [];
const cleanups: (() => void | Promise<void>)[] = [];
afterAll(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
  for (const name of databases) psql(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`, server!);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

/** An empty PostgreSQL database of the test's own on the server; dropped after the file. */
function emptyPg(): string {
  const name = `drs_copy_${process.pid}_${databases.length + 1}_${Date.now().toString(36)}`;
  psql(`CREATE DATABASE "${name}"`, server!);
  databases.push(name);
  return pgUrlOf(name, server!);
}

/** What `bun run cli db copy` prints and how it ends, run as an operator runs it. */
interface CopyRun {
  code: number;
  out: string;
  err: string;
}

/** The settings of a service on a database: DATABASE_URL for PostgreSQL, else the file. */
const on = (db: { url: string } | { path: string }): Record<string, string> => ('url' in db ? { DATABASE_URL: db.url } : { DATABASE_PATH: db.path });

function spawnCopy(source: { url: string } | { path: string }, to: string, extra: string[] = [], env: Record<string, string> = {}) {
  return Bun.spawn([process.execPath, 'run', 'scripts/cli.ts', 'db', 'copy', '--to', to, ...extra], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', VAULT_KEY, ...on(source), ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
}

async function copy(source: { url: string } | { path: string }, to: string, extra: string[] = [], env: Record<string, string> = {}): Promise<CopyRun> {
  const proc = spawnCopy(source, to, extra, env);
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, out, err };
}

// ---- the original: a SQLite deployment with every kind of row, made through the API and the jobs ----------

const NOW = '2026-11-16T09:00:00.000Z';
const plaid = startFakePlaid();
const receiver = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('thanks') });
cleanups.push(() => {
  plaid.stop();
  receiver.stop(true);
});
/** The settings every service of the file runs with: the one vault key, the fake Plaid, quick settlement. */
const ENV = {
  VAULT_KEY,
  PLAID_API_URL: plaid.url,
  SANDBOX_SETTLEMENT_MS: String(SETTLE),
  MONITOR_READ_INTERVAL_MS: String(READ_EVERY),
  WEBHOOK_RETRY_BASE_MS: '1000',
};

/** What a lender made: its API key and the ids of what it reads back. */
interface LenderData {
  key: string;
  batches: string[];
  schedules: string[];
  borrowers: string[];
}

interface Original {
  lenders: Record<'first' | 'second', LenderData>;
  /** The portal's session cookie of the first lender's dashboard user. */
  cookie: string;
  /** The service's clock when the data was made: the copies are served at the same time. */
  at: string;
}

async function expectStatus(r: Promise<{ status: number; body: unknown }>, status: number): Promise<any> {
  const got = await r;
  expect({ status: got.status, body: got.body }).toMatchObject({ status });
  return got.body;
}

/**
 * Rows of the tables no request of a SQLite service writes (the replicas' shared state, kept in memory on
 * SQLite) or that only faults and provider webhooks write, written here with values of the kinds their stores
 * write: the copy carries every table, these included (a real number, bytes, an expired lease, a sealed value).
 */
function addUnreachableRows(a: TestContext): void {
  const now = a.clock.now();
  const db = a.rt.sqlite;
  db.query('INSERT INTO job_state (name, runs, failures, last_started_at, last_finished_at, last_duration_ms, last_error) VALUES (?, ?, ?, ?, ?, ?, ?)').run('payment-dispatch', 41, 1, now - 5, now - 2, 3, 'connection reset');
  // Run out long ago: a lease of a replica that is gone holds nothing.
  db.query('INSERT INTO leases (name, owner, until) VALUES (?, ?, ?)').run('job:return-rates', 'replica-gone', now - 3_600_000);
  db.query('INSERT INTO rate_buckets (key, tokens, at) VALUES (?, ?, ?)').run('key:01a2', 12.625, now);
  db.query('INSERT INTO sign_in_counts (key, count, first) VALUES (?, ?, ?)').run('pair:9f3c', 2, now - 60_000);
  db.query('INSERT INTO held_files (key, id, name, body, at) VALUES (?, ?, ?, ?, ?)').run('session:5e1d', 'file-1', 'results.csv', new Uint8Array([0, 1, 2, 0xfe, 0xff, 0x00, 0x7f]), now);
  db.query('INSERT INTO provider_webhook_receipts (provider, receipt_key, received_at) VALUES (?, ?, ?)').run('stripe', 'evt_copy_0001', now);
  db.query(
    'INSERT INTO bank_link_relinks (lender_id, link_digest, provider, authorizer_unique_id, created_at, health, since, expires_at, next_probe_at, probe_interval_ms, link_sealed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(a.lender.id, 'digest-unlinked', 'plaid', 'gone-borrower', now, 'relink_required', now, null, now + 3_600_000, 3_600_000, a.rt.vault.seal('["p","access-sandbox-gone","acc_gone"]'));
  db.query('INSERT INTO payment_observations_set_aside (lender_id, connection_id, source, source_event_id, reference, status, error, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
    a.lender.id,
    null,
    'processor',
    'evt-set-aside-1',
    'DRS-unknown-1',
    'settled',
    'no payment with this reference',
    now,
  );
  // An upload cut short: its file kept, sealed, for the upload worker to finish.
  const file = Bun.zstdCompressSync(Buffer.from('authorizer_unique_id,reference,payment_amount,payment_status,submitted_at\nuploaded,OUT-3,7.00,sent,2026-11-14\n'), { level: 1 });
  db.query('INSERT INTO unfinished_uploads (id, lender_id, creator, file_sealed, checked_at, done, matched) VALUES (?, ?, ?, ?, ?, ?, ?)').run(
    '01a22500-0000-7000-8000-000000000001',
    a.lender.id,
    null,
    a.rt.vault.sealBytes(file),
    now,
    0,
    0,
  );
}

async function buildOriginal(a: TestContext): Promise<Original> {
  const first = a.lender;
  const second = a.newLender('second-lender', { cards: true });
  const hook = (p: string) => `http://127.0.0.1:${receiver.port}${p}`;

  // Webhook endpoints, processor keys, a policy, a bank-data connection checked at (the fake) Plaid.
  await expectStatus(a.json('POST', '/v1/webhook_endpoints', { body: { url: hook('/payments'), event_types: ['PAYMENT_EVENT', 'ENROLLMENT_BLOCKED'] } }), 201);
  await expectStatus(a.json('POST', '/v1/webhook_endpoints', { key: second.key, body: { url: hook('/second'), event_types: ['PAYMENT_EVENT'] } }), 201);
  await expectStatus(a.json('POST', '/v1/payment_connections', { body: { api_key: 'sbx_copy_first_00000000001', rail_scope: 'both', is_default: true } }), 201);
  await expectStatus(a.json('POST', '/v1/payment_connections', { key: second.key, body: { api_key: 'sbx_copy_second_0000000001', rail_scope: 'both', is_default: true } }), 201);
  await expectStatus(a.json('PATCH', '/v1/collection_policy', { body: { time_zone: 'America/Chicago' } }), 200);
  plaid.addClient('client_copy', 'plaid-secret-copy-00001234');
  await expectStatus(a.json('POST', '/v1/bank_data_connections', { body: { provider: 'plaid', client_id: 'client_copy', secret: 'plaid-secret-copy-00001234', environment: 'sandbox' } }), 201);
  plaid.addItem('access-sandbox-copy1', [{ account_id: 'acc_copy_0001', available: 75, current: 75 }]);
  plaid.addTransactions('access-sandbox-copy1', 'acc_copy_0001', { everyDays: 14, payday: '2026-11-06', payCents: 1_500_00, until: a.clock.now() });

  // Balance checks, one with a webhook, and a schedule run now.
  const batches: string[] = [];
  const balances = await expectStatus(
    a.json('POST', '/v1/balance_requests', {
      body: {
        authorizers: [bankAuthorizer('bal-1'), bankAuthorizer('bal-2', { account_number: '0000000001', metadata: { branch: 'north' } }), bankAuthorizer('bal-3', { account_number: '99990404' })],
        webhook_url: hook('/balances'),
      },
    }),
    201,
  );
  batches.push(balances.batch_id);
  const schedule = await expectStatus(
    a.json('POST', '/v1/monitoring/scheduled_balance_request', {
      body: { name: 'weekly', interval_days: 7, time_of_day: '09:30', authorizers: [bankAuthorizer('sch-1'), bankAuthorizer('sch-2', { account_number: '0000250000' })] },
    }),
    201,
  );
  const run = await expectStatus(a.json('POST', `/v1/monitoring/schedules/${schedule.schedule_id}/run`), 202);
  batches.push(run.batch_id);
  await processBalances(a.rt);

  // Borrowers: collected, returned and tried again (a payment chain), returned late, a pay pattern learned
  // from the sandbox's history, one linked through Plaid, and card borrowers of the second lender. The payday
  // rule's notices are the lender's own here (no debit waits for them): the covered borrower fails twice.
  await expectStatus(a.json('PATCH', '/v1/collection_policy', { body: { notice_channel: null } }), 200);
  const future = Number(NOW.slice(0, 4)) + 2;
  await expectStatus(
    a.json('POST', '/v1/payment_enrollments', {
      body: {
        borrowers: [
          enrollBorrower('settles', { collectable_amount: 42500 }),
          // Cents 98: the sandbox fails the first try, and keeps the idempotency key's attempt.
          enrollBorrower('retried', { collectable_amount: 42598 }),
          enrollBorrower('r01', { collectable_amount: 10091 }),
          // Covered by the payday rule: its second R01 in a row makes a consumer-rights notice due.
          enrollBorrower('covered', { collectable_amount: 10091, cfpb_covered: true, account_number: '0501234567' }),
          // An account of its own: its late R10 blocks every borrower on the account it is returned from.
          enrollBorrower('late', { collectable_amount: 42595, account_number: '0401234567' }),
          enrollBorrower('pattern', { account_number: '999721500', collectable_amount: 9_000_000 }),
          enrollBorrower('linked', { collectable_amount: 9_000_000, bank_link: { provider: 'plaid', access_token: 'access-sandbox-copy1', account_id: 'acc_copy_0001' } }),
          enrollBorrower('uploaded', { account_number: '0000000001', collectable_amount: 5000 }),
        ],
      },
    }),
    207,
  );
  await expectStatus(
    a.json('POST', '/v1/payment_enrollments', {
      key: second.key,
      body: {
        borrowers: [
          enrollBorrower('card-raw', { collectable_amount: 5000, charge_instrument: { card: { debit_card_number: '4242424242424242', expiration_month: 12, expiration_year: future } } }),
          enrollBorrower('card-token', { collectable_amount: 5000, charge_instrument: { processor_token: 'sbxpm_lender_token', card_last4: '4242' } }),
        ],
      },
    }),
    207,
  );
  for (let round = 0; round < 4; round++) {
    await cycle(a);
    await dispatchAndSettle(a, SETTLE);
    await readDueHistories(a.rt);
    await deliverDueWebhooks(a.rt);
    a.clock.advance(READ_EVERY);
  }
  await pollProcessors(a.rt);
  // The covered borrower's two failures made the rights notice due: sent, then a new authorization under the payday rule.
  const sentAt = new Date(a.clock.now()).toISOString();
  await expectStatus(a.json('POST', '/v1/payment_enrollments/covered/rights_notice', { body: { sent_at: sentAt, channel: 'electronic' } }), 200);
  a.clock.advance(60_000);
  const obtained = new Date(a.clock.now()).toISOString();
  const transfers = [{ date: obtained.slice(0, 10), max_amount_cents: 5000, channel: 'ach' }];
  await expectStatus(a.json('POST', '/v1/payment_enrollments/covered/authorizations', { body: { obtained_at: obtained, method: 'signed', evidence_ref: 'copy-auth', transfers } }), 200);

  // Fraud monitoring's record: a policy version, a review of it, a re-send onto another account (a switch the
  // account_changed rule reads), and a disposition of an alert.
  await expectStatus(a.json('PUT', '/v1/fraud_monitoring/policy', { body: { rules: { velocity: { action: 'alert' } }, notes: 'Copied as it is.', changed_by: 'ops' } }), 200);
  await expectStatus(a.json('POST', '/v1/fraud_monitoring/reviews', { body: { reviewed_on: NOW.slice(0, 10), reviewer: 'Ops, compliance', notes: 'Reviewed.', policy_version: 1 } }), 201);
  await expectStatus(a.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('r01', { collectable_amount: 10091, account_number: '0601234567' })] } }), 207);
  const alerts = await expectStatus(a.json('GET', '/v1/fraud_alerts'), 200);
  await expectStatus(a.json('POST', `/v1/fraud_alerts/${alerts.alerts[0].id}/disposition`, { body: { disposition: 'cleared', note: 'Checked.', disposed_by: 'ops' } }), 200);

  // A results file of payments made outside the service.
  const form = new FormData();
  const csv = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\n' + 'uploaded,OUT-1,50.00,settled,2026-11-10,2026-11-12,,\nuploaded,OUT-2,12.00,returned,2026-11-11,,2026-11-13,R01\n';
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'results.csv');
  await expectStatus(a.json('POST', '/v1/payment_results/uploads', { form }), 200);
  // A bank's Notification of Change on the uploaded borrower's account (its corrected data sealed).
  const noc = new FormData();
  noc.append('file', new Blob(['authorizer_unique_id,change_code,corrected_data\nuploaded,C05,37\n'], { type: 'text/csv' }), 'noc.csv');
  await expectStatus(a.json('POST', '/v1/payment_results/uploads', { form: noc }), 200);

  // Debited last, not settled yet: the sandbox holds its outcome to come.
  await expectStatus(a.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('in-flight', { collectable_amount: 30000 })] } }), 207);
  await cycle(a);

  await evaluateAll(a.rt);
  await writeProviderCalls(a.rt);
  await indexUnsearchedBorrowers(a.rt);
  await deliverDueWebhooks(a.rt);
  const portal = await signedIn(a, { email: 'ops@example.test' });
  addUnreachableRows(a);

  // A balance check left waiting: its batch counts in the lender's backlog (kept by triggers).
  const waiting = await expectStatus(a.json('POST', '/v1/balance_requests', { key: second.key, body: { authorizers: [bankAuthorizer('wait-1'), bankAuthorizer('wait-2')] } }), 201);
  return {
    lenders: {
      first: { key: first.key, batches, schedules: [schedule.schedule_id], borrowers: ['settles', 'retried', 'r01', 'covered', 'late', 'pattern', 'linked', 'uploaded', 'in-flight'] },
      second: { key: second.key, batches: [waiting.batch_id], schedules: [], borrowers: ['card-raw', 'card-token'] },
    },
    cookie: portal.cookie,
    at: new Date(a.clock.now()).toISOString(),
  };
}

// ---- the reads compared: every GET of the API and the portal, and the exports ------------------------------

interface Answer {
  status: number;
  type: string;
  body: string;
}

/**
 * Every read a lender's client and its dashboard user make of the data, as the service `c` answers them, by
 * who asked and the path: each list page by page (two items a page, following its page token), each item's
 * detail, the CSV exports and the portal's pages.
 */
async function reads(c: TestContext, o: Original): Promise<Map<string, Answer>> {
  const out = new Map<string, Answer>();
  const get = async (who: string, path: string): Promise<Answer> => {
    const res = await c.request('GET', path, who === 'portal' ? { key: null, headers: { cookie: o.cookie } } : { key: o.lenders[who as 'first' | 'second'].key });
    const answer = { status: res.status, type: res.headers.get('content-type') ?? '', body: await res.text() };
    out.set(`${who} GET ${path}`, answer);
    return answer;
  };
  const json = async (who: string, path: string) => JSON.parse((await get(who, path)).body);
  const pages = async (who: string, path: string): Promise<any[]> => {
    const sep = path.includes('?') ? '&' : '?';
    const bodies: any[] = [];
    let url = `${path}${sep}limit=2`;
    for (let i = 0; i < 100; i++) {
      const body = await json(who, url);
      bodies.push(body);
      // A batch still being checked hands back the same token until it has more: its end for now.
      if (!body.next_page_token || url.endsWith(encodeURIComponent(body.next_page_token))) return bodies;
      url = `${path}${sep}limit=2&next_page_token=${encodeURIComponent(body.next_page_token)}`;
    }
    throw new Error(`${path}: more pages than the data has: ${JSON.stringify(bodies.slice(0, 3))}`);
  };
  for (const [who, own] of Object.entries(o.lenders)) {
    for (const batch of own.batches) {
      await get(who, `/v1/balance_requests/${batch}`);
      await pages(who, `/v1/balances?batch_id=${batch}`);
    }
    await get(who, `/v1/balances/csv?${own.batches.map((b) => `batch_ids=${b}`).join('&')}`);
    for (const aid of ['bal-1', 'bal-2', 'sch-1', 'wait-1']) await pages(who, `/v1/monitoring/authorizers/${aid}/history`);
    for (const connection of (await json(who, '/v1/bank_data_connections')).connections) {
      await get(who, `/v1/bank_data_connections/${connection.id}/usage`);
      await get(who, `/v1/bank_data_connections/${connection.id}/usage?month=2026-10`);
    }
    await get(who, '/v1/collection_policy');
    await get(who, '/v1/fraud_monitoring/policy');
    await pages(who, '/v1/fraud_alerts');
    await pages(who, '/v1/fraud_monitoring/reviews');
    await get(who, `/v1/fraud_monitoring/report?year=${NOW.slice(0, 4)}`);
    await pages(who, '/v1/monitoring/schedules');
    for (const id of own.schedules) await get(who, `/v1/monitoring/schedules/${id}`);
    await get(who, '/v1/payment_connections');
    await pages(who, '/v1/payment_enrollments');
    for (const aid of own.borrowers) {
      await get(who, `/v1/payment_enrollments/${aid}`);
      await get(who, `/v1/payment_enrollments/${aid}/authorizations`);
      await get(who, `/v1/payment_events?authorizer_unique_id=${aid}`);
    }
    for (const page of await pages(who, '/v1/payment_results/uploads')) for (const u of page.uploads) await get(who, `/v1/payment_results/uploads/${u.id}`);
    await get(who, '/v1/return_rates');
    await get(who, '/v1/return_rates?window_days=120');
    await get(who, '/v1/webhook_endpoints');
    await pages(who, '/v1/webhooks/deliveries');
    await get(who, '/v1/webhooks/secret');
  }
  // Another lender's data is not found, on the copy as on the original.
  await get('second', `/v1/payment_enrollments/${o.lenders.first.borrowers[0]}`);
  await get('second', `/v1/balance_requests/${o.lenders.first.batches[0]}`);
  const { batches, schedules, borrowers } = o.lenders.first;
  const portal = [
    '/portal',
    '/portal/balance-checks',
    ...batches.map((b) => `/portal/balance-checks/${b}`),
    `/portal/balance-checks/export?${batches.map((b) => `batch_ids=${b}`).join('&')}`,
    '/portal/monitoring',
    ...schedules.map((id) => `/portal/monitoring/${id}`),
    '/portal/payments/bank-data',
    '/portal/payments/borrowers',
    '/portal/payments/borrowers.csv',
    ...borrowers.map((aid) => `/portal/payments/borrowers/${aid}`),
    '/portal/payments/borrowers?q=Lovelace',
    '/portal/payments/connections',
    '/portal/payments/list',
    '/portal/payments/list.csv',
    '/portal/payments/results-upload',
    '/portal/payments/rules',
    '/portal/developers',
  ];
  for (const path of portal) await get('portal', path);
  return out;
}

// ---- comparing databases ------------------------------------------------------------------------------------

/** Every table's rows of a SQLite file, in key order, each value as the copy carries its kind (bytes as hex). */
function contents(path: string): Record<string, unknown[][]> {
  const db = new Database(path, { readonly: true });
  try {
    const out: Record<string, unknown[][]> = {};
    for (const t of copyPlan()) {
      const keys = t.key.map((i) => `"${t.columns[i]!.name}"`).join(', ');
      const rows = db.query(`SELECT ${t.columns.map((c) => `"${c.name}"`).join(', ')} FROM "${t.name}" ORDER BY ${keys}`).safeIntegers(true).values() as unknown[][];
      out[t.name] = rows.map((r) =>
        r.map((v, i) => (t.columns[i]!.kind === 'bytes' && v !== null ? Buffer.from(typeof v === 'string' ? Buffer.from(v) : (v as Uint8Array)).toString('hex') : v)),
      );
    }
    return out;
  } finally {
    db.close();
  }
}

/** The same answer to every request: a difference fails naming the requests, and shows the first. */
function expectSameAnswers(got: Map<string, Answer>, expected: Map<string, Answer>): void {
  const differing = [...expected].filter(([k, v]) => !Bun.deepEquals(got.get(k), v)).map(([k]) => k);
  if (differing.length > 0) expect({ request: differing[0], answer: got.get(differing[0]!) }).toEqual({ request: differing[0], answer: expected.get(differing[0]!) });
  expect(differing).toEqual([]);
  expect(got.size).toBe(expected.size);
}

/** Tables of a PostgreSQL database's public schema. */
const pgTableNames = (url: string) => psql(`SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.tables WHERE table_schema = 'public'`, url).split(',').filter((n) => n !== '');

if (!server) {
  test(`the copy between engines: needs a PostgreSQL server (${noServerReason})`, () => {
    expect(server).toBeNull();
  });
} else {
  describe('what is copied', () => {
    test('every table of both schemas, the same tables in each, the tables the migrations make on each engine', async () => {
      const plan = copyPlan().map((t) => t.name);
      const names = schemaTables();
      expect(names.sqlite).toEqual(names.postgres);
      expect([...plan].sort()).toEqual(names.sqlite);
      expect(plan.length).toBeGreaterThan(40);
      // What the migrations make, which is what a database holds: the tables of the schemas and nothing else.
      const file = join(dir, 'migrated.sqlite');
      openDatabase(file).close();
      const sqlite = new Database(file, { readonly: true });
      const made = (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> '__drizzle_migrations' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
      const triggers = sqlite.query("SELECT tbl_name AS on_table, sql FROM sqlite_master WHERE type = 'trigger'").all() as { on_table: string; sql: string }[];
      sqlite.close();
      expect(made).toEqual(names.sqlite);
      const url = emptyPg();
      await applyPgMigrations(url);
      expect(pgTableNames(url)).toEqual(names.postgres);

      // Tables the triggers write are named, after the tables that set them off; foreign keys come first.
      const fed = new Set(Object.keys(FILLED_BY_TRIGGERS));
      const setters = new Set(Object.values(FILLED_BY_TRIGGERS).flat());
      const pgTriggers = psql(
        `SELECT string_agg(c.relname || ':' || p.prosrc, '|') FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid WHERE NOT t.tgisinternal`,
        url,
      ).split('|').map((x) => ({ on_table: x.slice(0, x.indexOf(':')), sql: x.slice(x.indexOf(':') + 1) }));
      expect(triggers.length).toBeGreaterThan(0);
      expect(pgTriggers.length).toBe(triggers.length);
      for (const trigger of [...triggers, ...pgTriggers]) {
        expect(setters).toContain(trigger.on_table);
        for (const [, written] of trigger.sql.slice(trigger.sql.search(/\bBEGIN\b/)).matchAll(/(?:INSERT\s+INTO|\bUPDATE)\s+(?!SET\b)[`"]?(\w+)/gi)) expect(fed).toContain(written!);
      }
      const order = new Map(plan.map((n, i) => [n, i]));
      for (const [table, sources] of Object.entries(FILLED_BY_TRIGGERS)) for (const source of sources) expect(order.get(source)!).toBeLessThan(order.get(table)!);
    });
  });

  const originalPath = join(dir, 'original.sqlite');
  /** The PostgreSQL copy of the original (a service has run on it since). */
  let pgUrl: string;

  describe('SQLite → PostgreSQL → SQLite', () => {
    const backPath = join(dir, 'back.sqlite');
    let original: Original;
    let answers: Map<string, Answer>;

    test('a service on SQLite makes every kind of row through its API and jobs', async () => {
      const a = createTestContext({ ...ENV, DATABASE_PATH: originalPath }, { clockAt: NOW });
      try {
        original = await buildOriginal(a);
        answers = await reads(a, original);
      } finally {
        a.close();
      }
      // Every table has rows; the reads found the data (the second lender's look at the first's are refused).
      const rows = contents(originalPath);
      expect(Object.entries(rows).filter(([, r]) => r.length === 0).map(([t]) => t)).toEqual([]);
      const refused = [...answers].filter(([, v]) => v.status !== 200).map(([k]) => k);
      expect(refused).toHaveLength(2);
      expect(refused.every((k) => k.startsWith('second '))).toBe(true);
      expect(answers.size).toBeGreaterThan(80);
      expect(JSON.parse(answers.get('first GET /v1/payment_enrollments/r01')!.body)).toMatchObject({ payments_used: 3 });
    }, 120_000);

    test('copied into an empty PostgreSQL database: migrated, every table verified, progress shown, nothing of the copy left behind', async () => {
      pgUrl = emptyPg();
      const before = contents(originalPath);
      const run = await copy({ path: originalPath }, pgUrl);
      expect({ code: run.code, err: run.err }).toEqual({ code: 0, err: expect.any(String) });
      expect(run.out).toContain(`Copied ${copyPlan().length} tables`);
      expect(run.out).toContain('row count and checksum match');
      expect(run.err).toMatch(/payment_events: \d+ \/ \d+ rows \(100%\)/);
      expect(run.err).toMatch(/payment_events: \d+ rows, checksum [0-9a-f]{12} ok/);
      expect(pgTableNames(pgUrl)).not.toContain(PROGRESS_TABLE);
      expect(pgTableNames(pgUrl)).toEqual(schemaTables().postgres);
      expect(psql('SELECT count(*) FROM drizzle.__drizzle_migrations', pgUrl)).toBe(String(knownPgMigrations().length));
      // The source is read only.
      expect(contents(originalPath)).toEqual(before);
      // Sealed values as they were: the same text, never opened and sealed again.
      const db = new Database(originalPath, { readonly: true });
      const sealed = (db.query('SELECT key_sealed FROM payment_connections ORDER BY id').all() as { key_sealed: string }[]).map((r) => r.key_sealed);
      // Ids handed out go on past every copied one (and past the source's deleted ones).
      const counters = db.query('SELECT name, seq FROM sqlite_sequence').all() as { name: string; seq: number }[];
      db.close();
      expect(psql("SELECT string_agg(key_sealed, ',' ORDER BY id) FROM payment_connections", pgUrl).split(',')).toEqual(sealed);
      for (const t of copyPlan().filter((x) => x.identity)) {
        const seq = counters.find((c) => c.name === t.name)?.seq ?? 0;
        const last = Number(psql(`SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('${t.name}', '${t.identity}')::regclass), 0)`, pgUrl));
        expect({ table: t.name, last: last >= seq }).toEqual({ table: t.name, last: true });
      }
    }, 60_000);

    test('copied back into a new SQLite file: every row of every table as the original has it', async () => {
      // Small batches: every kind of key (text, integer, bytes, composite) is paged on PostgreSQL.
      const run = await copy({ url: pgUrl }, `sqlite:${backPath}`, ['--batch-size', '7']);
      expect({ code: run.code, err: run.err }).toEqual({ code: 0, err: expect.any(String) });
      expect(run.out).toContain(`DATABASE_PATH=${backPath}`);
      expect(contents(backPath)).toEqual(contents(originalPath));
      const db = new Database(backPath, { readonly: true });
      expect(db.query(`SELECT name FROM sqlite_master WHERE name = '${PROGRESS_TABLE}'`).get()).toBeNull();
      const counters = db.query('SELECT name, seq FROM sqlite_sequence ORDER BY name').all();
      db.close();
      const source = new Database(originalPath, { readonly: true });
      expect(counters).toEqual(source.query('SELECT name, seq FROM sqlite_sequence ORDER BY name').all());
      source.close();
    }, 60_000);

    test('a service on the PostgreSQL copy answers every read as the original did', async () => {
      const b = createTestContext({ ...ENV, DATABASE_URL: pgUrl }, { clockAt: original.at });
      try {
        expectSameAnswers(await reads(b, original), answers);
        // And it goes on from there: a new balance check is accepted and read back.
        const more = await b.json('POST', '/v1/balance_requests', { key: original.lenders.first.key, body: { authorizers: [bankAuthorizer('after-copy')] } });
        expect(more.status).toBe(201);
        await processBalances(b.rt);
        expect((await b.json('GET', `/v1/balances?batch_id=${more.body.batch_id}`, { key: original.lenders.first.key })).body.balances).toHaveLength(1);
      } finally {
        b.close();
      }
    }, 60_000);

    test('a service on the SQLite copy of the copy answers every read as the original did', async () => {
      const c = createTestContext({ ...ENV, DATABASE_PATH: backPath }, { clockAt: original.at });
      try {
        expectSameAnswers(await reads(c, original), answers);
      } finally {
        c.close();
      }
    }, 60_000);
  });

  describe('refused, nothing written', () => {
    test('a target that holds data, on either engine', async () => {
      const url = emptyPg();
      await applyPgMigrations(url);
      psql("INSERT INTO lenders (id, name, debit_card_approved, created_at) VALUES ('held-1', 'already-here', 0, 1)", url);
      const intoPg = await copy({ path: originalPath }, url);
      expect(intoPg.code).toBe(1);
      expect(intoPg.err).toContain('is not empty (rows in lenders): the copy writes only into an empty database');
      expect(psql('SELECT string_agg(name, \',\') FROM lenders', url)).toBe('already-here');
      expect(pgTableNames(url)).not.toContain(PROGRESS_TABLE);

      const file = join(dir, 'holds-data.sqlite');
      const h = openDatabase(file);
      h.sqlite.run("INSERT INTO lenders (id, name, debit_card_approved, created_at) VALUES ('held-2', 'already-here', 0, 1)");
      h.close();
      const intoSqlite = await copy({ url: pgUrl }, `sqlite:${file}`);
      expect(intoSqlite.code).toBe(1);
      expect(intoSqlite.err).toContain(`${file} is not empty (rows in lenders)`);
      const db = new Database(file, { readonly: true });
      expect(db.query('SELECT id FROM lenders').all()).toEqual([{ id: 'held-2' }]);
      expect(db.query(`SELECT 1 FROM sqlite_master WHERE name = '${PROGRESS_TABLE}'`).get()).toBeNull();
      db.close();
    }, 60_000);

    test('sealed values under a vault key VAULT_KEY does not hold: the key id is named, the target untouched', async () => {
      const url = emptyPg();
      const other = randomBytes(32).toString('base64');
      const run = await copy({ path: originalPath }, url, [], { VAULT_KEY: other });
      expect(run.code).toBe(1);
      expect(run.err).toMatch(/sealed under vault key id [0-9a-f]{8}, which VAULT_KEY \(and VAULT_OLD_KEYS\) do not hold/);
      expect(run.err).not.toContain(other);
      expect(pgTableNames(url)).toEqual([]);
      // Without VAULT_KEY at all: how to get it from the key file.
      const none = await copy({ path: originalPath }, url, [], { VAULT_KEY: '', VAULT_KEY_FILE: join(dir, 'vault.key') });
      expect(none.code).toBe(1);
      expect(none.err).toContain(`VAULT_KEY=$(cat ${join(dir, 'vault.key')})`);
      expect(pgTableNames(url)).toEqual([]);
    }, 60_000);

    test('what the command is given: a target of the other engine, a batch size, a URL kept out of messages', async () => {
      const env = { DATABASE_PATH: originalPath, VAULT_KEY };
      await expect(runCli(['db', 'copy'], env)).rejects.toThrow('Name the target with --to postgres://');
      await expect(runCli(['db', 'copy', '--to', 'mysql://x/y'], env)).rejects.toThrow('Name the target with --to postgres://');
      const same = join(dir, 'same-engine.sqlite');
      await expect(runCli(['db', 'copy', '--to', `sqlite:${same}`], env)).rejects.toThrow('both sqlite');
      expect(existsSync(same)).toBe(false);
      await expect(runCli(['db', 'copy', '--to', 'postgres://u@127.0.0.1:1/x', '--batch-size', '0'], env)).rejects.toThrow('--batch-size is a number of rows from 1 to 5000');
      await expect(runCli(['db', 'copy', '--to', 'postgres://u@127.0.0.1:1/x', '--batch-size', '9000'], env)).rejects.toThrow(CliError);
      // A server that does not answer: the error names the target without its password.
      const down = await runCli(['db', 'copy', '--to', 'postgres://drs:s3cret-pw@127.0.0.1:1/x'], env, { readStdin: async () => '', progress: () => {} }).catch((e: Error) => e);
      expect(down).toBeInstanceOf(CliError);
      expect((down as Error).message).not.toContain('s3cret-pw');
      expect(await runCli(['help'])).toContain('db copy --to');
    }, 60_000);

    test('a service running on the SQLite file; once it is stopped the copy goes through', async () => {
      const running = join(dir, 'running.sqlite');
      copyFileSync(originalPath, running);
      const harness = new ServiceHarness({ DATABASE_PATH: running, VAULT_KEY });
      cleanups.push(() => harness.cleanup());
      const service = await harness.start();
      const url = emptyPg();
      const refused = await copy({ path: running }, url);
      expect(refused.code).toBe(1);
      expect(refused.err).toContain(`The service is running on ${running} (PID ${service.proc.pid}): stop it first`);
      expect(pgTableNames(url)).toEqual([]);
      await service.kill('SIGTERM');
      const run = await copy({ path: running }, url);
      expect({ code: run.code, err: run.code === 0 ? '' : run.err }).toEqual({ code: 0, err: '' });
    }, 90_000);

    test('a replica running on the PostgreSQL database; once it is stopped the copy goes through', async () => {
      const url = emptyPg();
      const harness = new ServiceHarness({ DATABASE_URL: url, VAULT_KEY });
      cleanups.push(() => harness.cleanup());
      const service = await harness.start();
      const file = join(dir, 'from-running.sqlite');
      const refused = await copy({ url }, `sqlite:${file}`);
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/A replica (is running|holds work) on postgres:\/\/[^ ]+: /);
      expect(existsSync(file)).toBe(false);
      await service.kill('SIGTERM');
      const run = await copy({ url }, `sqlite:${file}`);
      expect({ code: run.code, err: run.code === 0 ? '' : run.err }).toEqual({ code: 0, err: '' });
    }, 90_000);
  });

  /**
   * A copy of the original into a new PostgreSQL database, killed (SIGKILL) mid-table: batches of one row,
   * and the third row of sandbox_payments (a table with no foreign key, late in the order) already written by
   * a transaction of the test's that it keeps open, so the copy's insert of that row waits. Once it is seen
   * waiting the copy is killed and the test's transaction rolled back: the target holds every table before
   * sandbox_payments and that table's first two rows.
   */
  async function interruptedCopy(): Promise<string> {
    const url = emptyPg();
    await applyPgMigrations(url);
    const source = new Database(originalPath, { readonly: true });
    const third = source.query('SELECT * FROM sandbox_payments ORDER BY id LIMIT 1 OFFSET 2').get() as Record<string, unknown>;
    source.close();
    const blocker = new SQL(url, { max: 1 });
    const held = await blocker.reserve();
    try {
      await held.unsafe('BEGIN');
      const columns = Object.keys(third);
      await held.unsafe(`INSERT INTO sandbox_payments (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, columns.map((c) => third[c]));
      const proc = spawnCopy({ path: originalPath }, url, ['--batch-size', '1']);
      const name = new URL(url).pathname.slice(1);
      await waitFor('the copy waits for the third row of sandbox_payments', async () => {
        if (proc.exitCode !== null) throw new Error(`the copy ended (${proc.exitCode}): ${await new Response(proc.stderr).text()}`);
        return psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${name}' AND wait_event_type = 'Lock'`, server!) === '1';
      });
      proc.kill('SIGKILL');
      await proc.exited;
    } finally {
      await held.unsafe('ROLLBACK');
      await held.release();
      await blocker.close();
    }
    // The killed copy's sessions end once the server sees its connections closed.
    const name = new URL(url).pathname.slice(1);
    await waitFor('the killed copy’s sessions end', async () => psql(`SELECT count(*) FROM pg_stat_activity WHERE datname = '${name}'`, server!) === '0');
    return url;
  }

  describe('interrupted', () => {
    test('killed mid-table, then run again: goes on after the last committed row and ends with a verified copy', async () => {
      const url = await interruptedCopy();
      expect(psql('SELECT count(*) FROM sandbox_payments', url)).toBe('2');
      const progress = Object.fromEntries(psql(`SELECT string_agg(name || '=' || state, E'\n') FROM ${PROGRESS_TABLE}`, url).split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
      expect(progress.source).toBe(`sqlite:${realpathSync(originalPath)}`);
      expect(JSON.parse(progress['table:sandbox_payments']!)).toMatchObject({ rows: 2, done: false });
      expect(JSON.parse(progress['table:lenders']!)).toMatchObject({ rows: 2, done: true });
      const lendersBefore = psql('SELECT count(*) FROM lenders', url);

      const run = await copy({ path: originalPath }, url);
      expect({ code: run.code, err: run.code === 0 ? '' : run.err }).toEqual({ code: 0, err: '' });
      expect(run.err).toContain('Resuming the copy');
      expect(run.err).toContain('lenders: already copied (2 rows)');
      expect(run.err).toMatch(/sandbox_payments: \d+ \/ \d+ rows \(100%\)/);
      expect(psql('SELECT count(*) FROM lenders', url)).toBe(lendersBefore);
      const source = new Database(originalPath, { readonly: true });
      expect(psql('SELECT string_agg(id, \',\' ORDER BY id) FROM sandbox_payments', url)).toBe((source.query('SELECT id FROM sandbox_payments ORDER BY id').all() as { id: string }[]).map((r) => r.id).join(','));
      source.close();
      expect(pgTableNames(url)).not.toContain(PROGRESS_TABLE);
    }, 90_000);

    test('a row changed in the target and one removed before the copy is verified: both tables named, the copy not taken as done', async () => {
      const url = await interruptedCopy();
      psql("UPDATE lenders SET name = 'changed' WHERE name = 'second-lender'", url);
      psql('DELETE FROM batch_items WHERE id = (SELECT min(id) FROM batch_items)', url);
      const run = await copy({ path: originalPath }, url);
      expect(run.code).toBe(1);
      expect(run.err).toContain('The copy does not match the source in');
      expect(run.err).toContain('lenders (checksums differ)');
      const counted = /batch_items \((\d+) rows in the source, (\d+) in the target\)/.exec(run.err);
      expect(Number(counted?.[1]) - Number(counted?.[2])).toBe(1);
      expect(run.err).toContain('drop the target (or remove its file) and run the copy again');
      // Not finished: the progress stays, and running it again says the same.
      expect(pgTableNames(url)).toContain(PROGRESS_TABLE);
      const again = await copy({ path: originalPath }, url);
      expect(again.code).toBe(1);
      expect(again.err).toContain('lenders (checksums differ)');
    }, 90_000);

    test('a copy under way from another database is not resumed from this one', async () => {
      const url = await interruptedCopy();
      const other = join(dir, 'other-source.sqlite');
      copyFileSync(originalPath, other);
      const run = await copy({ path: other }, url);
      expect(run.code).toBe(1);
      expect(run.err).toContain(`holds an unfinished copy of another database (sqlite:${realpathSync(originalPath)})`);
    }, 90_000);
  });
}
