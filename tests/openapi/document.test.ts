// The OpenAPI document as tools nobody here wrote read it: swagger-parser validation, Redocly's recommended
// rules and Spectral's spectral:oas with no error, ajv (strict, draft 2020-12) compiling every schema, and every
// route that reads a body showing it. Routes added later go through the same checks.
import { afterAll, describe, expect, test } from 'bun:test';
import { WEBHOOK_TYPES } from '../../db/schema/enums';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { useTestContext } from '../helpers/context';

const ctx = useTestContext();
const dir = mkdtempSync(join(tmpdir(), 'drs-openapi-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ROOT = join(import.meta.dir, '../..');

type Json = Record<string, any>;
const docPromise = ctx.app.handle(new Request('http://localhost/docs/json')).then((r) => r.json() as Promise<Json>);
const file = docPromise.then((doc) => {
  const p = join(dir, 'openapi.json');
  writeFileSync(p, JSON.stringify(doc));
  return p;
});

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const operations = (doc: Json) =>
  Object.entries(doc.paths as Json).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((m) => ({ path, method: m, op: item[m] as Json })));

function run(cmd: string[]): { code: number; out: string } {
  const p = Bun.spawnSync(cmd, { cwd: dir, env: { ...process.env, NO_COLOR: '1', REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } });
  return { code: p.exitCode, out: p.stdout.toString() + p.stderr.toString() };
}

describe('the OpenAPI document', () => {
  test('is valid for swagger-parser', async () => {
    const api = (await SwaggerParser.validate(structuredClone(await docPromise) as never)) as Json;
    expect(Object.keys(api.paths).length).toBeGreaterThan(15);
  });

  test("passes Redocly's recommended rules with no error", async () => {
    const r = run([join(ROOT, 'node_modules/.bin/redocly'), 'lint', '--extends', 'recommended', '--format', 'stylish', await file]);
    expect(r.out).not.toMatch(/\berror\b/);
    expect(r.code).toBe(0);
  }, 60_000);

  test("passes Spectral's spectral:oas with no error", async () => {
    writeFileSync(join(dir, '.spectral.yaml'), 'extends: ["spectral:oas"]\n');
    const r = run([join(ROOT, 'node_modules/.bin/spectral'), 'lint', await file, '--ruleset', join(dir, '.spectral.yaml'), '--fail-severity', 'error']);
    expect(r.out).toMatch(/0 errors|No results/);
    expect(r.code).toBe(0);
  }, 60_000);

  test('every schema compiles under ajv strict (draft 2020-12)', async () => {
    const doc = await docPromise;
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    // OpenAPI's own annotations in schemas, allowed by the 3.1 dialect.
    ajv.addKeyword('example');
    const id = (name: string) => `https://schemas.invalid/${name}`;
    const local = (s: unknown) => JSON.parse(JSON.stringify(s).replace(/"#\/components\/schemas\/([^"]+)"/g, (_, n: string) => `"${id(n)}"`));
    for (const [name, schema] of Object.entries(doc.components.schemas as Json)) ajv.addSchema({ ...local(schema), $id: id(name) });
    const schemas: { where: string; schema: Json }[] = [];
    for (const [name, schema] of Object.entries(doc.components.schemas as Json)) schemas.push({ where: `components/${name}`, schema: schema as Json });
    for (const { path, method, op } of operations(doc)) {
      for (const p of op.parameters ?? []) schemas.push({ where: `${method} ${path} ?${p.name}`, schema: p.schema });
      for (const [type, media] of Object.entries((op.requestBody?.content ?? {}) as Json)) schemas.push({ where: `${method} ${path} body ${type}`, schema: (media as Json).schema });
      for (const [status, res] of Object.entries(op.responses as Json)) {
        for (const [type, media] of Object.entries(((res as Json).content ?? {}) as Json)) schemas.push({ where: `${method} ${path} ${status} ${type}`, schema: (media as Json).schema });
      }
    }
    for (const [type, item] of Object.entries((doc.webhooks ?? {}) as Json)) {
      schemas.push({ where: `webhook ${type}`, schema: ((item as Json).post as Json & { requestBody: { content: Json } }).requestBody.content['application/json'].schema });
    }
    const failures: string[] = [];
    for (const { where, schema } of schemas) {
      try {
        ajv.compile(local(schema));
      } catch (e) {
        failures.push(`${where}: ${(e as Error).message}`);
      }
    }
    expect(schemas.length).toBeGreaterThan(80);
    expect(failures).toEqual([]);
  });

  test('every webhook the service sends is described with its payload', async () => {
    const doc = await docPromise;
    expect(Object.keys(doc.webhooks as Json).sort()).toEqual([...WEBHOOK_TYPES].sort());
    const alert = (doc.webhooks as Json).RETURN_RATE_ALERT as { post: { requestBody: { content: { 'application/json': { schema: { properties: Json; required: string[] } } } } } };
    const schema = alert.post.requestBody.content['application/json'].schema;
    expect(schema.required.sort()).toEqual(['class', 'debits', 'event_uuid', 'rate', 'returns', 'status', 'threshold', 'type', 'window_days']);
  });

  test('every route that reads a body shows it, with a schema and an example', async () => {
    const doc = await docPromise;
    const readers = ctx.app.routes.filter((r) => ((r.hooks as { parse?: unknown[] }).parse?.length ?? 0) > 0);
    expect(readers.length).toBeGreaterThan(8);
    for (const r of readers) {
      const op = doc.paths[r.path.replace(/:([^/]+)/g, '{$1}')]?.[r.method.toLowerCase()];
      const content = op?.requestBody?.content ?? {};
      const media = Object.values(content) as Json[];
      expect(`${r.method} ${r.path}: ${media.length}`).toBe(`${r.method} ${r.path}: 1`);
      expect(media[0]!.schema?.type ?? media[0]!.schema?.$ref).toBeTruthy();
      const hasExample = JSON.stringify(media[0]).includes('"examples"') || JSON.stringify(media[0]).includes('"example"');
      expect(`${r.method} ${r.path} example: ${hasExample}`).toBe(`${r.method} ${r.path} example: true`);
    }
  });

  test('no 3.0 nullable, response headers documented, 405 documented', async () => {
    const doc = await docPromise;
    expect(JSON.stringify(doc)).not.toContain('"nullable"');
    for (const { op } of operations(doc)) {
      expect(op.responses['405']?.headers?.Allow).toBeDefined();
      for (const res of Object.values(op.responses as Json)) expect((res as Json).headers?.['X-Request-Id']).toBeDefined();
      if (op.responses['429']) expect(op.responses['429'].headers['Retry-After']).toBeDefined();
    }
    expect(doc.paths['/v1/balance_requests'].post.responses['201'].headers['Idempotent-Replayed']).toBeDefined();
    expect(doc.paths['/v1/balance_requests/csv'].post.responses['201'].headers['Idempotent-Replayed']).toBeDefined();
    expect(doc.paths['/v1/balances/csv'].get.responses['200'].headers['Content-Disposition']).toBeDefined();
    const batchIds = doc.paths['/v1/balances/csv'].get.parameters.find((p: Json) => p.name === 'batch_ids');
    expect(batchIds).toMatchObject({ required: true, schema: { type: 'array' } });
    const limit = doc.paths['/v1/balances'].get.parameters.find((p: Json) => p.name === 'limit');
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 100 });
  });

  test('both balance request routes say a replay in its body, and how to ask for a fresh read', async () => {
    const doc = await docPromise;
    for (const path of ['/v1/balance_requests', '/v1/balance_requests/csv']) {
      const op = doc.paths[path].post as Json;
      const answer = op.responses['201'].content['application/json'].schema as Json;
      expect([path, answer.required]).toEqual([path, expect.arrayContaining(['replayed'])]);
      expect(answer.properties.replayed).toMatchObject({ type: 'boolean', description: expect.stringContaining('no new batch') });
      expect(op.description).toContain('replayed: true');
      expect(op.description).toContain('within 24 hours');
      expect(op.description).toContain('POST /v1/payment_enrollments/{authorizer_unique_id}/read');
      expect(op.description).toMatch(/changed (body|file)/);
    }
  });

  test('the results upload answers in snake_case; its camelCase names are deprecated, each naming its replacement', async () => {
    const doc = await docPromise;
    const uploads = doc.paths['/v1/payment_results/uploads'];
    const deprecatedOf = (schema: Json) =>
      Object.entries(schema.properties as Json)
        .filter(([, s]) => (s as Json).deprecated === true)
        .map(([name, s]) => ({ name, description: (s as Json).description as string }));
    const report = uploads.post.responses['200'].content['application/json'].schema as Json;
    const row = report.properties.rows.items as Json;
    const summary = uploads.get.responses['200'].content['application/json'].schema.properties.uploads.items as Json;
    const detail = doc.paths['/v1/payment_results/uploads/{id}'].get.responses['200'].content['application/json'].schema as Json;
    const cases: [string, Json, string[]][] = [
      ['report', report, ['rowCount', 'dataRowCount', 'needsAttention', 'dryRun']],
      ['report row', row, ['authorizerUniqueId', 'amountCents']],
      ['history', summary, ['recordedAt', 'rowCount', 'dataRowCount', 'needsAttention', 'problemCount']],
      ['upload', detail, ['recordedAt', 'rowCount', 'dataRowCount', 'needsAttention', 'problemCount']],
    ];
    const snake = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    for (const [where, schema, names] of cases) {
      const deprecated = deprecatedOf(schema);
      expect(`${where}: ${deprecated.map((d) => d.name).sort()}`).toBe(`${where}: ${[...names].sort()}`);
      for (const d of deprecated) {
        // The replacement is named, answered beside it, and not deprecated itself.
        expect(d.description).toContain(`the same value as ${snake(d.name)},`);
        expect((schema.properties as Json)[snake(d.name)]).toBeDefined();
        expect((schema.properties as Json)[snake(d.name)].deprecated).toBeUndefined();
      }
      // Every other name of the answer is snake_case.
      expect(Object.keys(schema.properties as Json).filter((n) => !names.includes(n) && n !== snake(n))).toEqual([]);
    }
    expect(report.properties.already_recorded).toMatchObject({ type: 'integer' });
    const query = Object.fromEntries((uploads.post.parameters as Json[]).map((p) => [p.name, p]));
    expect(query.dry_run.deprecated).toBeUndefined();
    expect(query.dryRun).toMatchObject({ deprecated: true, schema: { deprecated: true, description: expect.stringContaining('the same value as dry_run,') } });
  });
});

/** A `## ` section of a markdown page: from its heading to the next heading of the same level (or the end). */
function section(page: string, heading: string): string {
  const start = page.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no "## ${heading}" section`);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

describe('the docs a new lender reads', () => {
  const apiGuide = Bun.file(join(ROOT, 'docs/api.md')).text();
  const apiTable = apiGuide.then((page) => section(page, 'Routes'));
  const shape = (path: string) => path.replace(/\{[^}]+\}/g, '{}');

  test('every /v1 path of the document is in the route table of docs/api.md', async () => {
    const table = shape(await apiTable);
    const missing = Object.keys((await docPromise).paths as Json)
      .filter((p) => p.startsWith('/v1/'))
      .filter((p) => !new RegExp('`[A-Z/ ,]*' + shape(p).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '[`?\\[]').test(table));
    expect(missing).toEqual([]);
  });

  test('the document names both ways to get an API key and gives the sandbox test values', async () => {
    const description = (await docPromise).info.description as string;
    expect(description).toContain('bun run cli key create');
    expect(description).toMatch(/portal.*API keys/s);
    expect(description).toContain('110000000');
    expect(description).toContain('9999');
    expect(description).toMatch(/sandbox charge|cents of the amount/);
  });
});

describe('money in one vocabulary', () => {
  /** Every numeric property whose name speaks of money, with the description the document gives it. */
  function moneyFields(doc: Json): { where: string; description: string }[] {
    const found: { where: string; description: string }[] = [];
    const seen = new Set<unknown>();
    const walk = (node: unknown, where: string) => {
      if (node === null || typeof node !== 'object' || seen.has(node)) return;
      seen.add(node);
      const props = (node as Json).properties as Json | undefined;
      if (props) {
        for (const [name, schema] of Object.entries(props)) {
          const s = schema as Json;
          const types = [s.type, ...((s.anyOf ?? s.oneOf ?? []) as Json[]).map((x) => x.type)].flat();
          // A duration named after what it bounds (max_balance_age_minutes) is not an amount.
          if (/amount|balance|collected|reversed|net|cents/i.test(name) && !/status|_(minutes|days)$/.test(name) && types.some((t) => t === 'integer' || t === 'number')) {
            found.push({ where: `${where}.${name}`, description: String(s.description ?? '') });
          }
        }
      }
      for (const [k, v] of Object.entries(node as Json)) if (k !== 'examples' && k !== 'example') walk(v, `${where}/${k}`);
    };
    walk(doc.paths, '');
    return found;
  }

  test('every amount field says its unit: cents or dollars', async () => {
    const fields = moneyFields(await docPromise);
    expect(fields.length).toBeGreaterThan(8);
    const unnamed = fields.filter((f) => !/cents|dollars/i.test(f.where.split('.').pop()!) && !/\bcents\b|\bdollars\b/i.test(f.description));
    expect(unnamed.map((f) => f.where)).toEqual([]);
  });

  test('docs/api.md has one table of the money units', async () => {
    const money = section(await Bun.file(join(ROOT, 'docs/api.md')).text(), 'Money');
    expect(money.match(/^\| Where \| Fields \| Unit \|$/gm)).toHaveLength(1);
    expect(money).toMatch(/\| `collectable_amount`[^\n]*\| cents/);
    expect(money).toMatch(/\| `balance`[^\n]*\| dollars/);
    expect(money).toMatch(/\| `threshold_amount`[^\n]*\| dollars/);
    expect(money).toMatch(/results CSV[^\n]*\| dollars/i);
  });
});
