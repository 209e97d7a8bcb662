// /v1/payment_connections: every rule, status and message of the spec and payments.md section 2, each
// refusal with nothing stored or changed after it, and the key never in clear anywhere.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { KeyRefused, ProcessorUnavailable, type Processor } from '../../../src/adapters/processors';
import { resolveKey } from '../../../src/modules/payment-connections/resolve';

// Stripe stands outside: a processor that answers as Stripe would for a reachable or unreachable account.
let stripeMode: 'ok' | 'refuse' | 'down' = 'ok';
const fakeStripe: Processor = {
  name: 'stripe',
  async verifyKey() {
    if (stripeMode === 'refuse') throw new KeyRefused();
    if (stripeMode === 'down') throw new ProcessorUnavailable('connection refused');
    return { accountId: 'acct_fake_1' };
  },
  tokenizeCard: () => Promise.reject(new Error('not used here')),
  createDebit: () => Promise.reject(new Error('not used here')),
  listChanges: () => Promise.reject(new Error('not used here')),
  findPayment: () => Promise.reject(new Error('not used here')),
  listPayments: () => Promise.reject(new Error('not used here')),
  cancelPayment: () => Promise.reject(new Error('not used here')),
};

const contexts: TestContext[] = [];
const fresh = () => {
  const c = createTestContext({}, { stripe: () => fakeStripe });
  contexts.push(c);
  return c;
};
afterAll(() => contexts.forEach((c) => c.close()));

let n = 0;
const sbx = (tag = '') => `sbx_test_${String(++n).padStart(12, '0')}${tag}`;

async function create(c: TestContext, body: Record<string, unknown>, key?: string) {
  return c.json('POST', '/v1/payment_connections', { body, ...(key ? { key } : {}) });
}
const list = async (c: TestContext, key?: string) => (await c.json('GET', '/v1/payment_connections', key ? { key } : {})).body;
const rows = (c: TestContext) =>
  c.sql.query('SELECT id, rail_scope, is_default, merchant_ref, label, key_last4, key_sealed, deleted_at FROM payment_connections ORDER BY created_at, id').all();

describe('POST /v1/payment_connections', () => {
  test('201 with the key object: sealed, last four shown, default label, lender_admins', async () => {
    const c = fresh();
    const key = sbx();
    const r = await create(c, { api_key: key, rail_scope: 'both', is_default: true });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      label: `Sandbox key ending ${key.slice(-4)}`,
      merchant_ref: null,
      rail_scope: 'both',
      is_default: true,
      key_last4: key.slice(-4),
      last_poll_at: null,
      last_poll_error: null,
      access_scope: 'lender_admins',
      processor: 'sandbox',
    });
    expect(JSON.stringify(r.body)).not.toContain(key);
    const stored = c.sql.query('SELECT key_sealed FROM payment_connections').get() as { key_sealed: string };
    expect(stored.key_sealed.startsWith('v1.')).toBe(true);
    expect(c.rt.vault.open(stored.key_sealed)).toBe(key);
  });

  const refusals: [string, Record<string, unknown>, string][] = [
    ['api_key missing', { rail_scope: 'ach' }, '/api_key'],
    ['rail_scope missing', { api_key: 'sbx_test_000000000000aaaa' }, '/rail_scope'],
    ['rail_scope not ach, card or both', { api_key: 'sbx_test_000000000000aaaa', rail_scope: 'wire' }, '/rail_scope'],
    ['merchant_ref not a tag', { api_key: 'sbx_test_000000000000aaaa', rail_scope: 'ach', merchant_ref: 'Shop One' }, '/merchant_ref'],
    ['merchant_ref too long', { api_key: 'sbx_test_000000000000aaaa', rail_scope: 'ach', merchant_ref: 'a'.repeat(65) }, '/merchant_ref'],
    ['is_default with merchant_ref', { api_key: 'sbx_test_000000000000aaaa', rail_scope: 'ach', is_default: true, merchant_ref: 'shop' }, 'is_default'],
    ['label empty', { api_key: 'sbx_test_000000000000aaaa', rail_scope: 'ach', label: '' }, '/label'],
    ['label over 80 characters', { api_key: 'sbx_test_000000000000aaaa', rail_scope: 'ach', label: 'x'.repeat(81) }, '/label'],
    ['unknown field', { api_key: 'sbx_test_000000000000aaaa', rail_scope: 'ach', color: 'red' }, '/color'],
    ['a key of no supported processor', { api_key: 'pk_live_abcdefgh', rail_scope: 'ach' }, 'api_key'],
    ['a sandbox key that is too short', { api_key: 'sbx_short', rail_scope: 'ach' }, 'api_key'],
    ['a sandbox key the sandbox refuses', { api_key: 'sbx_test_refused_0000000001', rail_scope: 'ach' }, 'api_key'],
  ];
  for (const [name, body, path] of refusals) {
    test(`400: ${name}, nothing stored`, async () => {
      const c = fresh();
      const r = await create(c, body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('BAD_REQUEST');
      expect(r.body.error.details.errors.map((e: { path: string }) => e.path).join(' ')).toContain(path);
      expect(rows(c)).toEqual([]);
    });
  }

  test('400 for a key the processor refuses says so; 503 when the processor cannot be reached; nothing stored', async () => {
    const c = fresh();
    stripeMode = 'refuse';
    const refused = await create(c, { api_key: 'sk_test_abcdefghijklmnop', rail_scope: 'card' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toBe('the processor refused this key');
    stripeMode = 'down';
    const down = await create(c, { api_key: 'sk_test_abcdefghijklmnop', rail_scope: 'card' });
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('SERVICE_UNAVAILABLE');
    stripeMode = 'ok';
    expect(rows(c)).toEqual([]);
    const ok = await create(c, { api_key: 'rk_live_abcdefghijklmnop', rail_scope: 'card' });
    expect(ok.status).toBe(201);
    expect(ok.body.processor).toBe('stripe');
    expect(ok.body.label).toBe('Stripe key ending mnop');
  });

  test('400 for a key of a known prefix names what is wrong with it (its length, its characters), never the key', async () => {
    const c = fresh();
    const short = await create(c, { api_key: 'sbx_short', rail_scope: 'ach' });
    expect(short.status).toBe(400);
    expect(short.body.error.message).toContain('too short');
    expect(short.body.error.message).not.toContain('not a key of a supported processor');
    expect(short.body.error.message).not.toContain('sbx_short');
    const chars = await create(c, { api_key: 'sbx_abcdefghijklmnop-qrs', rail_scope: 'ach' });
    expect(chars.body.error.message).toContain('letters, digits and underscores only');
    const stripe = await create(c, { api_key: 'sk_test_abc-def', rail_scope: 'card' });
    expect(stripe.body.error.message).toContain('Stripe key');
    const other = await create(c, { api_key: 'pk_live_abcdefghijklmnop', rail_scope: 'card' });
    expect(other.body.error.message).toContain('not a key of a supported processor');
    expect(rows(c)).toEqual([]);
  });

  test('409: a second default for a rail_scope, and a second key of a tag for a rail_scope, say which; nothing stored', async () => {
    const c = fresh();
    const first = await create(c, { api_key: sbx(), rail_scope: 'ach', is_default: true });
    expect((await create(c, { api_key: sbx(), rail_scope: 'ach', merchant_ref: 'shop-1' })).status).toBe(201);
    const before = rows(c);
    const dup = await create(c, { api_key: sbx(), rail_scope: 'ach', is_default: true });
    expect(dup.status).toBe(409);
    expect(dup.body.error.message).toContain('default key for rail_scope ach');
    expect(dup.body.error.message).toContain(first.body.id);
    const tagged = await create(c, { api_key: sbx(), rail_scope: 'ach', merchant_ref: 'shop-1' });
    expect(tagged.status).toBe(409);
    expect(tagged.body.error.message).toContain('tag shop-1');
    expect(rows(c)).toEqual(before);
    // Other rail_scopes of the same tag, a both default beside an ach default, and an unused key are fine.
    for (const body of [
      { api_key: sbx(), rail_scope: 'card', merchant_ref: 'shop-1' },
      { api_key: sbx(), rail_scope: 'both', is_default: true },
      { api_key: sbx(), rail_scope: 'ach' },
    ]) {
      expect((await create(c, body)).status).toBe(201);
    }
  });

  test('two concurrent default creates: one 201, one 409, one default stored', async () => {
    const c = fresh();
    const [a, b] = await Promise.all([
      create(c, { api_key: sbx(), rail_scope: 'card', is_default: true }),
      create(c, { api_key: sbx(), rail_scope: 'card', is_default: true }),
    ]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    expect(c.sql.query("SELECT COUNT(*) AS n FROM payment_connections WHERE is_default = 1 AND rail_scope = 'card'").get()).toEqual({ n: 1 });
  });

  test('the database refuses a second default even when the code is bypassed', () => {
    const c = fresh();
    const insert = (id: string) =>
      c.sql
        .query(
          `INSERT INTO payment_connections (id, lender_id, processor, label, rail_scope, is_default, created_at, updated_at)
           VALUES (?, ?, 'sandbox', 'x', 'ach', 1, 0, 0)`,
        )
        .run(id, c.lender.id);
    insert('k1');
    expect(() => insert('k2')).toThrow(/UNIQUE|duplicate key/);
    expect(() =>
      c.sql
        .query(
          `INSERT INTO payment_connections (id, lender_id, processor, label, merchant_ref, rail_scope, is_default, created_at, updated_at)
           VALUES ('k3', ?, 'sandbox', 'x', 'tag', 'card', 1, 0, 0)`,
        )
        .run(c.lender.id),
    ).toThrow(/CHECK|check constraint/);
  });
});

describe('GET /v1/payment_connections', () => {
  test('no keys: empty list, both rails missing, zero counts', async () => {
    const c = fresh();
    expect(await list(c)).toEqual({ connections: [], missing_default_rails: ['ach', 'card'], ingested: 0, matched: 0, last_poll_at: null });
  });

  test('defaults first, then oldest first', async () => {
    const c = fresh();
    const unused = (await create(c, { api_key: sbx(), rail_scope: 'ach' })).body.id;
    c.clock.advance(1000);
    const tagged = (await create(c, { api_key: sbx(), rail_scope: 'card', merchant_ref: 'shop' })).body.id;
    c.clock.advance(1000);
    const def = (await create(c, { api_key: sbx(), rail_scope: 'card', is_default: true })).body.id;
    expect((await list(c)).connections.map((k: { id: string }) => k.id)).toEqual([def, unused, tagged]);
  });

  const combos: [string[], string[]][] = [
    [[], ['ach', 'card']],
    [['ach'], ['card']],
    [['card'], ['ach']],
    [['ach', 'card'], []],
    [['both'], []],
    [['ach', 'both'], []],
  ];
  for (const [defaults, missing] of combos) {
    test(`missing_default_rails with defaults [${defaults.join(', ')}] is [${missing.join(', ')}]`, async () => {
      const c = fresh();
      for (const scope of defaults) await create(c, { api_key: sbx(), rail_scope: scope, is_default: true });
      // Tagged and unused keys never count as defaults.
      await create(c, { api_key: sbx(), rail_scope: 'both', merchant_ref: 'tagged' });
      await create(c, { api_key: sbx(), rail_scope: 'both' });
      expect((await list(c)).missing_default_rails).toEqual(missing);
    });
  }
});

describe('PATCH /v1/payment_connections/{id}', () => {
  test('promote swaps with the current default of its rail_scope, which becomes an ordinary untagged key', async () => {
    const c = fresh();
    const old = (await create(c, { api_key: sbx(), rail_scope: 'ach', is_default: true })).body.id;
    const next = (await create(c, { api_key: sbx(), rail_scope: 'ach' })).body.id;
    const r = await c.json('PATCH', `/v1/payment_connections/${next}`, { body: { is_default: true } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: next, is_default: true, rail_scope: 'ach' });
    const byId = Object.fromEntries((await list(c)).connections.map((k: { id: string }) => [k.id, k]));
    expect(byId[old]).toMatchObject({ is_default: false, merchant_ref: null });
  });

  test('promote onto another rail_scope swaps with that rail_scope’s default', async () => {
    const c = fresh();
    const cardDefault = (await create(c, { api_key: sbx(), rail_scope: 'card', is_default: true })).body.id;
    const k = (await create(c, { api_key: sbx(), rail_scope: 'ach' })).body.id;
    const r = await c.json('PATCH', `/v1/payment_connections/${k}`, { body: { is_default: true, rail_scope: 'card' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ is_default: true, rail_scope: 'card' });
    expect((await list(c)).connections.find((x: { id: string }) => x.id === cardDefault).is_default).toBe(false);
  });

  test('demote needs no replacement', async () => {
    const c = fresh();
    const k = (await create(c, { api_key: sbx(), rail_scope: 'both', is_default: true })).body.id;
    const r = await c.json('PATCH', `/v1/payment_connections/${k}`, { body: { is_default: false } });
    expect(r.status).toBe(200);
    expect(r.body.is_default).toBe(false);
    expect((await list(c)).missing_default_rails).toEqual(['ach', 'card']);
  });

  test('409: a default moved onto a rail_scope with a default; a tagged key moved onto a rail_scope its tag has; nothing changed', async () => {
    const c = fresh();
    await create(c, { api_key: sbx(), rail_scope: 'ach', is_default: true });
    const cardDefault = (await create(c, { api_key: sbx(), rail_scope: 'card', is_default: true })).body.id;
    await create(c, { api_key: sbx(), rail_scope: 'ach', merchant_ref: 'shop' });
    const shopCard = (await create(c, { api_key: sbx(), rail_scope: 'card', merchant_ref: 'shop' })).body.id;
    const before = rows(c);
    const move = await c.json('PATCH', `/v1/payment_connections/${cardDefault}`, { body: { rail_scope: 'ach' } });
    expect(move.status).toBe(409);
    expect(move.body.error.message).toContain('default key for rail_scope ach');
    const moveTag = await c.json('PATCH', `/v1/payment_connections/${shopCard}`, { body: { rail_scope: 'ach' } });
    expect(moveTag.status).toBe(409);
    expect(moveTag.body.error.message).toContain('tag shop');
    expect(rows(c)).toEqual(before);
    // Onto a free rail_scope is fine.
    expect((await c.json('PATCH', `/v1/payment_connections/${shopCard}`, { body: { rail_scope: 'both' } })).status).toBe(200);
  });

  test('400: nothing to change, merchant_ref sent, a tagged key promoted, unknown field, bad values; nothing changed', async () => {
    const c = fresh();
    const tagged = (await create(c, { api_key: sbx(), rail_scope: 'ach', merchant_ref: 'shop' })).body.id;
    const before = rows(c);
    for (const [body, where] of [
      [{}, 'Nothing to change'],
      [{ merchant_ref: 'other' }, 'merchant_ref'],
      [{ is_default: true }, 'tagged'],
      [{ color: 'red' }, '/color'],
      [{ rail_scope: 'wire' }, '/rail_scope'],
      [{ label: '' }, '/label'],
      [{ api_key: 'nope' }, 'api_key'],
    ] as [Record<string, unknown>, string][]) {
      const r = await c.json('PATCH', `/v1/payment_connections/${tagged}`, { body });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body.error)).toContain(where);
    }
    expect(rows(c)).toEqual(before);
  });

  test('label edits; replace key: last four change, the new key is the one used, a refused key leaves the old one', async () => {
    const c = fresh();
    const oldKey = sbx('OLD1');
    const k = (await create(c, { api_key: oldKey, rail_scope: 'ach', is_default: true, label: 'Main' })).body.id;
    const relabel = await c.json('PATCH', `/v1/payment_connections/${k}`, { body: { label: 'Main account' } });
    expect(relabel.body.label).toBe('Main account');

    const refused = await c.json('PATCH', `/v1/payment_connections/${k}`, { body: { api_key: 'sbx_test_refused_00000000009' } });
    expect(refused.status).toBe(400);
    const keep = (await resolveKey({ deps: c.rt }, { lenderId: c.lender.id, rail: 'ach', merchantRef: null }))!;
    expect(c.rt.vault.open(keep.keySealed!)).toBe(oldKey);

    const newKey = sbx('NEW2');
    const r = await c.json('PATCH', `/v1/payment_connections/${k}`, { body: { api_key: newKey } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ key_last4: 'NEW2', label: 'Main account', rail_scope: 'ach', is_default: true, merchant_ref: null });
    const used = (await resolveKey({ deps: c.rt }, { lenderId: c.lender.id, rail: 'ach', merchantRef: null }))!;
    expect(c.rt.vault.open(used.keySealed!)).toBe(newKey);
  });
});

describe('DELETE /v1/payment_connections/{id}', () => {
  test('204; a deleted ach default falls back to the both default; the key is erased, the row kept', async () => {
    const c = fresh();
    const ach = (await create(c, { api_key: sbx(), rail_scope: 'ach', is_default: true })).body.id;
    const both = (await create(c, { api_key: sbx(), rail_scope: 'both', is_default: true })).body.id;
    expect((await resolveKey({ deps: c.rt }, { lenderId: c.lender.id, rail: 'ach', merchantRef: null }))!.id).toBe(ach);
    const r = await c.request('DELETE', `/v1/payment_connections/${ach}`);
    expect(r.status).toBe(204);
    expect(await r.text()).toBe('');
    expect((await resolveKey({ deps: c.rt }, { lenderId: c.lender.id, rail: 'ach', merchantRef: null }))!.id).toBe(both);
    expect((await list(c)).connections.map((k: { id: string }) => k.id)).toEqual([both]);
    expect(c.sql.query('SELECT key_sealed, CASE WHEN deleted_at IS NOT NULL THEN 1 ELSE 0 END AS gone FROM payment_connections WHERE id = ?').get(ach)).toEqual({ key_sealed: null, gone: 1 });
    // Deleted once; a second time it no longer exists.
    expect((await c.json('DELETE', `/v1/payment_connections/${ach}`)).status).toBe(404);
    // Its default slot is free again.
    expect((await create(c, { api_key: sbx(), rail_scope: 'ach', is_default: true })).status).toBe(201);
  });
});

describe('tenancy and secrecy', () => {
  test("another lender's key is 404 on PATCH and DELETE and absent from GET", async () => {
    const c = fresh();
    const other = c.newLender();
    const k = (await create(c, { api_key: sbx(), rail_scope: 'ach', is_default: true })).body.id;
    expect((await c.json('PATCH', `/v1/payment_connections/${k}`, { key: other.key, body: { label: 'mine now' } })).status).toBe(404);
    expect((await c.json('DELETE', `/v1/payment_connections/${k}`, { key: other.key })).status).toBe(404);
    expect((await list(c, other.key)).connections).toEqual([]);
    expect((await list(c)).connections[0].label).not.toBe('mine now');
    // And the other lender may have its own default for the same rail_scope.
    expect((await create(c, { api_key: sbx(), rail_scope: 'ach', is_default: true }, other.key)).status).toBe(201);
  });

  test('no response, log line or byte of the database files holds a key in clear', async () => {
    const c = fresh();
    const keys = [sbx('SECRETA'), sbx('SECRETB'), 'sk_test_SECRETSTRIPEKEY000001'];
    const bodies: string[] = [];
    const k1 = await create(c, { api_key: keys[0], rail_scope: 'ach', is_default: true });
    bodies.push(JSON.stringify(k1.body));
    bodies.push(JSON.stringify((await c.json('PATCH', `/v1/payment_connections/${k1.body.id}`, { body: { api_key: keys[1] } })).body));
    bodies.push(JSON.stringify((await create(c, { api_key: keys[2], rail_scope: 'card', is_default: true })).body));
    bodies.push(JSON.stringify((await create(c, { api_key: keys[0], rail_scope: 'card', is_default: true })).body)); // a 409
    bodies.push(JSON.stringify(await list(c)));
    const files = [c.storedText()];
    for (const key of keys) {
      for (const b of bodies) expect(b).not.toContain(key);
      for (const line of c.logs) expect(line).not.toContain(key);
      // A short message on failure: the files themselves must never be printed.
      expect(files.some((f) => f.includes(key)) ? `${key.slice(0, 8)}… found in the database files` : 'absent').toBe('absent');
    }
  });
});
