import { afterAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { sendWebhook } from '../../src/adapters/webhooks/sender';
import { generateWebhookSecret, signatureHeaders } from '../../src/adapters/webhooks/signing';

const oldSecret = generateWebhookSecret();
const newSecret = generateWebhookSecret();
const unrelatedSecret = generateWebhookSecret();

// A receiver as a lender would write it: it only trusts what the reference library verifies.
const verifiedBy: string[][] = [];
const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const body = await req.text();
    const headers = Object.fromEntries(req.headers);
    const ok: string[] = [];
    for (const [name, secret] of Object.entries({ old: oldSecret, new: newSecret, unrelated: unrelatedSecret })) {
      try {
        new Webhook(secret).verify(body, headers);
        ok.push(name);
      } catch {
        // not signed with this one
      }
    }
    verifiedBy.push(ok);
    return new Response(null, { status: ok.length > 0 ? 204 : 401 });
  },
});
afterAll(() => receiver.stop(true));

const nowSec = () => Math.floor(Date.now() / 1000);

async function deliver(secrets: string[]) {
  const body = JSON.stringify({ event_uuid: crypto.randomUUID(), type: 'BALANCE_BATCH_COMPLETED', batch_id: 'b_1' });
  const headers = signatureHeaders(secrets, `msg_${crypto.randomUUID()}`, nowSec(), body);
  const result = await sendWebhook({ url: `http://127.0.0.1:${receiver.port}/hook`, headers, body, allowPrivate: true });
  return { result, verified: verifiedBy.at(-1) };
}

describe('generateWebhookSecret', () => {
  test('is whsec_ plus base64 of 32 random bytes, usable by the reference library', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(() => new Webhook(secret)).not.toThrow();
    expect(generateWebhookSecret()).not.toBe(secret);
  });
});

describe('signatureHeaders', () => {
  test('is v1,<base64 HMAC-SHA256 of id.timestamp.body> keyed by the decoded secret', () => {
    const secret = generateWebhookSecret();
    const h = signatureHeaders([secret], 'msg_1', 1_700_000_000, '{"a":1}');
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key).update('msg_1.1700000000.{"a":1}').digest('base64');
    expect(h).toEqual({ 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'webhook-signature': `v1,${expected}` });
  });

  test('signs once per secret, space separated, in the order given', () => {
    const h = signatureHeaders([newSecret, oldSecret], 'msg_2', 1_700_000_000, '{}');
    const parts = h['webhook-signature'].split(' ');
    expect(parts).toHaveLength(2);
    expect(parts[0]).toBe(signatureHeaders([newSecret], 'msg_2', 1_700_000_000, '{}')['webhook-signature']);
    expect(parts[1]).toBe(signatureHeaders([oldSecret], 'msg_2', 1_700_000_000, '{}')['webhook-signature']);
  });

  test('refuses to sign without a secret', () => {
    expect(() => signatureHeaders([], 'msg_3', 1_700_000_000, '{}')).toThrow();
  });
});

describe('a receiver using the standardwebhooks library', () => {
  test('verifies a singly signed delivery with that secret only', async () => {
    const { result, verified } = await deliver([newSecret]);
    expect(result.outcome).toBe('delivered');
    expect(verified).toEqual(['new']);
  });

  test('verifies a doubly signed delivery (rotation overlap) with the new and the old secret, not a third', async () => {
    const { result, verified } = await deliver([newSecret, oldSecret]);
    expect(result.outcome).toBe('delivered');
    expect(verified).toContain('new');
    expect(verified).toContain('old');
    expect(verified).not.toContain('unrelated');
  });

  test('rejects a body changed after signing', () => {
    const headers = signatureHeaders([newSecret], 'msg_4', nowSec(), '{"amount":1}');
    expect(() => new Webhook(newSecret).verify('{"amount":2}', headers)).toThrow();
  });
});
