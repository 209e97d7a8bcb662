import { readJson } from '../../http/body';
import { validateAuthorizerList, validateAuthorizers, type AuthorizerRuleOptions, type FailedAuthorizer } from '../authorizers/rules';
import { parseBalanceCsv } from './csv-input';
import { BalanceRequestBody, type BalanceRequest } from './model';
import { packBatch, type PackedBatch } from './payload';

// The CPU-heavy part of accepting POST /v1/balance_requests (and of a balance CSV), on the body's bytes alone: the JSON read and
// checked against its schema, every authorizer's rules, the payload packed and sealed, the body's hash. No
// database and no clock of its own, so it runs the same on the event loop or in the accept worker.

export interface PreparedRequest {
  /** SHA-256 of the body as sent: the 24-hour replay cache's key. */
  bodyHash: string;
  webhookUrl: string | null;
  /** The authorizers that passed, packed and sealed (count 0 and nothing sealed when none did). */
  accepted: PackedBatch;
  failed: FailedAuthorizer[];
}

export function prepareBalanceRequest(
  bytes: Uint8Array,
  opts: AuthorizerRuleOptions & { seal: (plaintext: Uint8Array) => string },
): PreparedRequest {
  const bodyHash = new Bun.CryptoHasher('sha256').update(bytes).digest('hex');
  const body = readJson(bytes, BalanceRequestBody) as BalanceRequest;
  const { accepted, failed } = validateAuthorizerList(body.authorizers, opts);
  return {
    bodyHash,
    webhookUrl: body.webhook_url ?? null,
    accepted: packBatch(accepted, opts.seal),
    failed,
  };
}

/** A balance CSV prepared: its rows read, checked, packed and sealed; the rows that failed and the file's warnings. */
export interface PreparedCsv {
  /** SHA-256 of the file as sent: with its webhook_url, the 24-hour replay cache's key (service.ts csvReplayKey). */
  fileHash: string;
  accepted: PackedBatch;
  failed: FailedAuthorizer[];
  warnings: string[];
}

export async function prepareBalanceCsv(bytes: Uint8Array, opts: AuthorizerRuleOptions & { seal: (plaintext: Uint8Array) => string }): Promise<PreparedCsv> {
  const fileHash = new Bun.CryptoHasher('sha256').update(bytes).digest('hex');
  const parsed = await parseBalanceCsv(bytes);
  const { accepted, failed } = validateAuthorizers(parsed.candidates, opts);
  return { fileHash, accepted: packBatch(accepted, opts.seal), failed: [...parsed.failed, ...failed], warnings: parsed.warnings };
}
