// GET /v1/webhooks/secret and POST /v1/webhooks/secret/rotate, and what receivers see: during the 24 hours
// after a rotation each delivery carries a signature by the new and by the previous secret (both verify with
// `standardwebhooks`), afterwards only the new one.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { deliverDueWebhooks } from '../../../src/modules/webhooks/jobs';
import { ROTATION_OVERLAP_MS, signingSecrets } from '../../../src/modules/webhooks/service';
import {
  deliveryRow,
  enqueue,
  expectedSignature,
  signatureEntries,
  startReceiver,
  verifyWithLibrary,
  type Received,
} from './support';

const hook = startReceiver();
const contexts: TestContext[] = [];
afterAll(() => {
  hook.stop();
  for (const c of contexts) c.close();
});

function fresh(): TestContext {
  const ctx = createTestContext({ WEBHOOK_RETRY_BASE_MS: '1000' });
  contexts.push(ctx);
  return ctx;
}

const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

async function getSecret(ctx: TestContext, key?: string) {
  const res = await ctx.json('GET', '/v1/webhooks/secret', key ? { key } : {});
  expect(res.status).toBe(200);
  return res.body as { secret: string; created_at: string; previous_secret_expires_at: string | null };
}

/** Sends one fresh delivery and returns what the receiver got. */
async function sendOne(ctx: TestContext, lenderId = ctx.lender.id): Promise<Received> {
  hook.reset();
  const id = await enqueue(ctx, hook.url(), { lenderId });
  await deliverDueWebhooks(ctx.rt);
  expect(hook.requests).toHaveLength(1);
  expect(deliveryRow(ctx, id).state).toBe('delivered');
  return hook.requests[0]!;
}

const verifies = (secret: string, r: Received) => {
  try {
    verifyWithLibrary(secret, r);
    return true;
  } catch {
    return false;
  }
};

describe('GET /v1/webhooks/secret', () => {
  test('created on first use, a whsec_ secret of 32 random bytes, stable across reads', async () => {
    const ctx = fresh();
    const first = await getSecret(ctx);
    expect(first.secret).toMatch(SECRET);
    expect(Buffer.from(first.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(first.previous_secret_expires_at).toBeNull();
    expect(first.created_at).toBe(new Date(ctx.clock.now()).toISOString());
    ctx.clock.advance(60_000);
    expect(await getSecret(ctx)).toEqual(first);
  });

  test('first uses at the same moment make one secret: two reads, two deliveries signing', async () => {
    const ctx = fresh();
    const [a, b] = await Promise.all([getSecret(ctx), getSecret(ctx)]);
    expect(b).toEqual(a);
    const other = ctx.newLender();
    const now = ctx.clock.now();
    const [x, y] = await Promise.all([signingSecrets(ctx.rt, other.id, now), signingSecrets(ctx.rt, other.id, now)]);
    expect(x).toHaveLength(1);
    expect(y).toEqual(x);
    const rows = (lenderId: string) =>
      ctx.sql.query<{ n: number }, [string]>('SELECT count(*) AS n FROM webhook_secrets WHERE lender_id = ?').get(lenderId)!.n;
    expect(rows(ctx.lender.id)).toBe(1);
    expect(rows(other.id)).toBe(1);
  });

  test('each lender has its own secret; the API key is required', async () => {
    const ctx = fresh();
    const other = ctx.newLender();
    const a = await getSecret(ctx);
    const b = await getSecret(ctx, other.key);
    expect(b.secret).toMatch(SECRET);
    expect(b.secret).not.toBe(a.secret);
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: null })).status).toBe(401);
    expect((await ctx.json('POST', '/v1/webhooks/secret/rotate', { key: null })).status).toBe(401);
    expect((await ctx.json('GET', '/v1/webhooks/secret', { key: `drs_live_${'x'.repeat(32)}` })).status).toBe(401);
  });

  test('a delivery made before anyone read the secret is signed with the secret GET returns afterwards', async () => {
    const ctx = fresh();
    const got = await sendOne(ctx);
    const { secret } = await getSecret(ctx);
    expect(verifies(secret, got)).toBe(true);
    expect(signatureEntries(got)).toEqual([expectedSignature(secret, got)]);
  });
});

describe('POST /v1/webhooks/secret/rotate', () => {
  test('a new secret; for 24 hours deliveries carry both signatures and each verifies; afterwards only the new', async () => {
    const ctx = fresh();
    const old = (await getSecret(ctx)).secret;
    const before = await sendOne(ctx);
    expect(signatureEntries(before)).toHaveLength(1);

    const rotatedAt = ctx.clock.now();
    const rotated = await ctx.json('POST', '/v1/webhooks/secret/rotate');
    expect(rotated.status).toBe(201);
    const next = rotated.body.secret as string;
    expect(next).toMatch(SECRET);
    expect(next).not.toBe(old);
    expect(rotated.body).toEqual({
      secret: next,
      created_at: new Date(rotatedAt).toISOString(),
      previous_secret_expires_at: new Date(rotatedAt + ROTATION_OVERLAP_MS).toISOString(),
    });
    expect(await getSecret(ctx)).toEqual(rotated.body);

    // During the overlap: two v1 entries, one per secret; a receiver holding either secret accepts it.
    const during = await sendOne(ctx);
    expect(signatureEntries(during).sort()).toEqual([expectedSignature(next, during), expectedSignature(old, during)].sort());
    expect(verifies(old, during)).toBe(true);
    expect(verifies(next, during)).toBe(true);

    // Still inside the overlap a moment before it ends.
    ctx.clock.set(rotatedAt + ROTATION_OVERLAP_MS - 1);
    const late = await sendOne(ctx);
    expect(verifies(old, late)).toBe(true);
    expect(verifies(next, late)).toBe(true);

    // After 24 hours: only the new secret signs.
    ctx.clock.set(rotatedAt + ROTATION_OVERLAP_MS + 1);
    const after = await sendOne(ctx);
    expect(signatureEntries(after)).toEqual([expectedSignature(next, after)]);
    expect(verifies(next, after)).toBe(true);
    expect(verifies(old, after)).toBe(false);
    expect(await getSecret(ctx)).toEqual({ ...rotated.body, previous_secret_expires_at: null });
  });

  test('a retry of a delivery enqueued before the rotation is signed with the secrets current at the retry', async () => {
    const ctx = fresh();
    const old = (await getSecret(ctx)).secret;
    hook.reset((_r, i) => new Response(null, { status: i === 0 ? 500 : 200 }));
    const id = await enqueue(ctx, hook.url());
    await deliverDueWebhooks(ctx.rt);
    expect(signatureEntries(hook.requests[0]!)).toEqual([expectedSignature(old, hook.requests[0]!)]);

    const next = (await ctx.json('POST', '/v1/webhooks/secret/rotate')).body.secret as string;
    ctx.clock.set(deliveryRow(ctx, id).next_attempt_at!);
    await deliverDueWebhooks(ctx.rt);
    const retry = hook.requests[1]!;
    expect(retry.headers['webhook-id']).toBe(id);
    expect(verifies(old, retry)).toBe(true);
    expect(verifies(next, retry)).toBe(true);
    expect(deliveryRow(ctx, id).state).toBe('delivered');
  });

  test("rotating one lender's secret changes nothing for another lender", async () => {
    const ctx = fresh();
    const other = ctx.newLender();
    const otherSecret = (await getSecret(ctx, other.key)).secret;
    await ctx.json('POST', '/v1/webhooks/secret/rotate');
    expect(await getSecret(ctx, other.key)).toMatchObject({ secret: otherSecret, previous_secret_expires_at: null });
    const got = await sendOne(ctx, other.id);
    expect(signatureEntries(got)).toEqual([expectedSignature(otherSecret, got)]);
    // The rotating lender's secrets do not sign the other lender's deliveries.
    const mine = await getSecret(ctx);
    expect(verifies(mine.secret, got)).toBe(false);
  });

  test('two rotations inside 24 hours: the newest secret signs, and so do the ones still in their overlap', async () => {
    const ctx = fresh();
    const s0 = (await getSecret(ctx)).secret;
    const s1 = (await ctx.json('POST', '/v1/webhooks/secret/rotate')).body.secret as string;
    ctx.clock.advance(3_600_000);
    const s2 = (await ctx.json('POST', '/v1/webhooks/secret/rotate')).body.secret as string;
    expect(new Set([s0, s1, s2]).size).toBe(3);
    expect((await getSecret(ctx)).secret).toBe(s2);
    const got = await sendOne(ctx);
    for (const s of [s0, s1, s2]) expect(verifies(s, got)).toBe(true);
    // s0's overlap ends first (24 h after the first rotation); s1 keeps signing until 24 h after the second.
    ctx.clock.advance(ROTATION_OVERLAP_MS - 3_600_000 + 1);
    const later = await sendOne(ctx);
    expect(verifies(s0, later)).toBe(false);
    expect(verifies(s1, later)).toBe(true);
    expect(verifies(s2, later)).toBe(true);
  });
});
