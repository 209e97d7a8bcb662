import { timingSafeEqual } from 'node:crypto';
import { decodeProtectedHeader, importJWK, jwtVerify, type JWK } from 'jose';
import Stripe from 'stripe';
import type { PlaidWebhookKey } from '../../adapters/bank-data/linked';

// The providers' webhook signatures, checked with maintained libraries: Plaid's `Plaid-Verification` JWT with
// `jose` (ES256 only, the key fetched by its id and refused once Plaid retired it, issued within five minutes,
// the SHA-256 of the raw body equal to its request_body_sha256, compared in constant time); Stripe's
// `Stripe-Signature` with the official SDK and the endpoint secret (five minutes of tolerance).

/** How old a signed webhook may be. */
export const WEBHOOK_TOLERANCE_S = 300;

export type PlaidKey = PlaidWebhookKey;

/** The key id a Plaid token names, when its header is ES256 with a key id; null otherwise (refused unread). */
export function plaidKeyId(token: string): string | null {
  try {
    const h = decodeProtectedHeader(token);
    return h.alg === 'ES256' && typeof h.kid === 'string' && h.kid.length > 0 && h.kid.length <= 200 ? h.kid : null;
  } catch {
    return null;
  }
}

/** Whether a Plaid webhook's token verifies for this raw body with this key, at `now`. */
export async function verifyPlaid(token: string, raw: Uint8Array, key: PlaidKey, now: number): Promise<boolean> {
  if (key.expiredAt !== null) return false;
  try {
    const jwk: JWK = { kty: key.kty, crv: key.crv, x: key.x, y: key.y };
    const { payload } = await jwtVerify(token, await importJWK(jwk, 'ES256'), {
      algorithms: ['ES256'],
      maxTokenAge: WEBHOOK_TOLERANCE_S,
      clockTolerance: 5,
      currentDate: new Date(now),
    });
    const claimed = payload.request_body_sha256;
    if (typeof claimed !== 'string' || !/^[0-9a-f]{64}$/.test(claimed)) return false;
    const actual = new Bun.CryptoHasher('sha256').update(raw).digest();
    return timingSafeEqual(Buffer.from(claimed, 'hex'), actual);
  } catch {
    return false;
  }
}

/** The Stripe event a signed body holds, or null when its signature does not verify with the secret. */
export async function verifyStripe(raw: Uint8Array, header: string, secret: string, now: number): Promise<Stripe.Event | null> {
  try {
    return await Stripe.webhooks.constructEventAsync(Buffer.from(raw), header, secret, WEBHOOK_TOLERANCE_S, undefined, now);
  } catch {
    return null;
  }
}
