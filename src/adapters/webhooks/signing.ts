// Standard Webhooks signing (https://www.standardwebhooks.com). Receivers verify with any Standard Webhooks
// library, so the signature itself is computed by the reference package rather than by hand.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

const SECRET_PREFIX = 'whsec_';
// The standard asks for 24 to 64 random bytes; 32 equals the HMAC-SHA256 output, so more adds nothing.
const SECRET_BYTES = 32;

export type SignatureHeaders = Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string>;

export function generateWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/**
 * Headers for one delivery attempt. During a secret rotation the caller passes the new and the old secret:
 * each yields one `v1,…` entry and the standard lets receivers accept any entry of the space-separated list,
 * so receivers still holding the old secret keep verifying.
 */
export function signatureHeaders(
  secrets: string[],
  id: string,
  timestampSec: number,
  body: string,
): SignatureHeaders {
  if (secrets.length === 0) throw new Error('at least one webhook secret is required to sign');
  if (!Number.isInteger(timestampSec)) throw new Error('webhook timestamp must be whole seconds');
  // Webhook#sign floors the Date to seconds, so the header and the signed value always agree.
  const at = new Date(timestampSec * 1000);
  const signatures = [...new Set(secrets)].map((secret) => new Webhook(secret).sign(id, at, body));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': signatures.join(' '),
  };
}
