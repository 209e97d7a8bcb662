// A typed client generated from the document (openapi-typescript), used through openapi-fetch: a small flow
// is type-checked (tsc, strict) and run against the real app. A body or response that drifts from the
// document fails the type-check or the run.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { useTestContext } from '../helpers/context';
import { processBalances } from '../../src/modules/balance-requests/processing';

const ctx = useTestContext();
const ROOT = join(import.meta.dir, '../..');
// Inside the project, so the flow resolves openapi-fetch from node_modules; ignored by git.
const OUT = join(import.meta.dir, '.generated');
afterAll(() => rmSync(OUT, { recursive: true, force: true }));

const FLOW = `import createClient from 'openapi-fetch';
import type { paths } from './api';

export async function flow(baseUrl: string, key: string, settle: () => Promise<void>) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${key}\` } });
  const submitted = await client.POST('/v1/balance_requests', {
    body: { authorizers: [{ authorizer_unique_id: 'typed-1', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' }] },
  });
  if (!submitted.data) throw new Error('submit failed: ' + JSON.stringify(submitted.error));
  const batchId: string = submitted.data.batch_id;
  await settle();
  const status = await client.GET('/v1/balance_requests/{batch_id}', { params: { path: { batch_id: batchId } } });
  if (!status.data) throw new Error('status failed');
  const state: 'pending' | 'processing' | 'completed' = status.data.status;
  const page = await client.GET('/v1/balances', { params: { query: { batchId, limit: 10 } } });
  if (!page.data) throw new Error('results failed');
  const balance: number | null = page.data.balances[0]!.balance;
  const schedule = await client.POST('/v1/monitoring/scheduled_balance_request', {
    body: { name: 'typed schedule', interval_days: 7, authorizers: [{ authorizer_unique_id: 'typed-2', ssn: '123456789', account_number: '0001234567', routing_number: '110000000' }] },
  });
  if (!schedule.data) throw new Error('schedule failed: ' + JSON.stringify(schedule.error));
  const refused = await client.POST('/v1/balance_requests', { body: { authorizers: [] } });
  const code: string | undefined = refused.error?.error.code;
  return { batchId, state, balance, scheduleId: schedule.data.schedule_id, code };
}
`;

describe('a generated client', () => {
  test('type-checks a flow and runs it against the real app', async () => {
    mkdirSync(OUT, { recursive: true });
    const doc = (await (await ctx.app.handle(new Request('http://localhost/docs/json'))).json()) as Parameters<typeof openapiTS>[0];
    writeFileSync(join(OUT, 'api.d.ts'), astToString(await openapiTS(doc)));
    writeFileSync(join(OUT, 'flow.ts'), FLOW);
    const tsc = Bun.spawnSync(
      [join(ROOT, 'node_modules/.bin/tsc'), '--noEmit', '--strict', '--target', 'ES2022', '--module', 'ESNext', '--moduleResolution', 'Bundler', '--skipLibCheck', join(OUT, 'flow.ts')],
      { cwd: ROOT },
    );
    expect(tsc.stdout.toString() + tsc.stderr.toString()).toBe('');
    expect(tsc.exitCode).toBe(0);

    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => ctx.app.handle(req) });
    try {
      const { flow } = await import(join(OUT, 'flow.ts'));
      const r = await flow(`http://127.0.0.1:${server.port}`, ctx.lender.key, async () => void (await processBalances(ctx.rt)));
      expect(r).toMatchObject({ state: 'completed', balance: 12345.67, code: 'BAD_REQUEST' });
      expect(r.scheduleId).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      server.stop(true);
    }
  }, 60_000);
});
