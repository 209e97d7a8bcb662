// engine: sqlite
// No read writes behind the write gate's back. While an upload's transaction holds the gate (simulated here
// by holding it exclusively), every GET of the OpenAPI document and every portal page, asked by a lender that
// has never done anything, either answers without writing or waits for the gate: the main connection's
// changes do not move and db_write_gate_bypassed_total stays 0. A route added later is walked as well.
import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../helpers/context';
import { signedIn } from '../helpers/portal';
import { writeGate } from '../../src/platform/context';

const c = useTestContext();

/** Waits, turn by turn of the event loop, for a state: never for a time. */
async function until(state: () => boolean): Promise<void> {
  while (!state()) await new Promise((resolve) => setImmediate(resolve));
}

type Parameter = { name: string; in: string; required?: boolean; schema?: { type?: string; format?: string; minimum?: number; enum?: unknown[] } };
const ID = '01890a5d-ac96-774b-bcce-b302099a8057';
const valueOf = (p: Parameter): string => {
  const s = p.schema ?? {};
  if (s.enum?.length) return String(s.enum[0]);
  if (s.type === 'integer' || s.type === 'number') return String(s.minimum ?? 1);
  if (s.format === 'date') return '2026-11-02';
  return ID;
};

/** Every GET of the OpenAPI document with its path and required query parameters filled, and every portal page. */
async function everyRead(): Promise<{ path: string; portal: boolean }[]> {
  const doc = (await c.json('GET', '/docs/json')).body as { paths: Record<string, { get?: { parameters?: Parameter[] } }> };
  const out: { path: string; portal: boolean }[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    if (!item.get) continue;
    const params = item.get.parameters ?? [];
    const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(valueOf(params.find((p) => p.name === name) ?? { name, in: 'path' })));
    const query = params.filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=${encodeURIComponent(valueOf(p))}`);
    out.push({ path: query.length ? `${path}?${query.join('&')}` : path, portal: false });
  }
  for (const r of c.app.routes) {
    if (r.method === 'GET' && r.path.startsWith('/portal')) out.push({ path: r.path.replace(/:[^/]+/g, ID), portal: true });
  }
  return out;
}

describe('reads and the write gate', () => {
  test('while an upload holds the gate, no GET route or portal page of a fresh lender writes past it', async () => {
    const fresh = c.newLender('fresh-reader');
    const portal = await signedIn(c, { lenderId: fresh.id });
    const reads = await everyRead();
    expect(reads.some((r) => r.path === '/v1/webhooks/secret')).toBe(true);
    expect(reads.some((r) => r.path === '/portal/developers')).toBe(true);

    const gate = writeGate(c.rt);
    const changes = () => (c.rt.db.$client.query('SELECT total_changes() AS n').get() as { n: number }).n;
    let release!: () => void;
    const upload = gate.exclusive(() => new Promise<void>((resolve) => (release = resolve)));
    await until(() => gate.held);
    const before = changes();

    const answers: Promise<{ path: string; status: number }>[] = [];
    for (const r of reads) {
      const waiting = gate.waiting;
      let settled = false;
      const headers: Record<string, string> = r.portal ? { cookie: portal.cookie } : {};
      const answer = c.request('GET', r.path, { key: r.portal ? null : fresh.key, headers }).then(async (res) => {
        await res.arrayBuffer();
        settled = true;
        return { path: r.path, status: res.status };
      });
      answers.push(answer);
      // Answered, or waiting for the gate (which it may take once the upload is over).
      await until(() => settled || gate.waiting > waiting);
    }
    expect(changes()).toBe(before);
    expect(gate.bypassed).toBe(0);

    release();
    await upload;
    for (const a of await Promise.all(answers)) expect({ path: a.path, serverError: a.status >= 500 }).toEqual({ path: a.path, serverError: false });
    const metrics = await (await c.request('GET', '/metrics', { key: null })).text();
    expect(metrics).toMatch(/^db_write_gate_bypassed_total 0$/m);
    // The fresh lender's first read of its secret waited for the gate and then created it, once.
    const first = await c.json('GET', '/v1/webhooks/secret', { key: fresh.key });
    expect(first.status).toBe(200);
    expect((await c.json('GET', '/v1/webhooks/secret', { key: fresh.key })).body.secret).toBe(first.body.secret);
  });
});
