import type { NormalizedAuthorizer, SensitiveFields } from '../authorizers/rules';
import type { Vault } from '../../platform/vault';

// Compact encodings of a batch's payload: one positional array per authorizer instead of an object with
// repeated keys, then compressed (zstd, its fastest level). For 1000 varied borrowers (a 250 KB request) that
// is 42 KB stored instead of 181 KB: less to seal, write, fsync and copy into the database file, which is
// where the event loop's time went when accepting. Compressing before sealing lets a sealed value's length
// say something of how alike its borrowers are; it is stored at rest and never shown to a caller. A payload
// stored before compression (JSON text) is read as it is.

/** The part of an authorizer kept in the clear, as stored in batch_payloads.items. */
export interface QueuedAuthorizer {
  id: string;
  type: NormalizedAuthorizer['paymentType'];
  routing: string | null;
  phone: string | null;
  zip: string | null;
  meta: Record<string, string | number | boolean> | null;
  threshold: number | null;
}

/** The first bytes of a zstd frame; packed JSON starts with `[`. */
const ZSTD_MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

/** Packed JSON, compressed for storing (sealed or not). */
export function compressPacked(json: string): Uint8Array {
  return Bun.zstdCompressSync(Buffer.from(json, 'utf8'), { level: 1 });
}

/** Packed JSON as it was stored: compressed bytes, or the text of a payload stored before compression. */
export function readPacked(stored: string | Uint8Array): string {
  if (typeof stored === 'string') return stored;
  const compressed = stored.byteLength >= 4 && ZSTD_MAGIC.every((b, i) => stored[i] === b);
  return Buffer.from(compressed ? Bun.zstdDecompressSync(stored) : stored).toString('utf8');
}

type PackedSensitive = [
  string | null, // ssn
  string | null, // ein
  string | null, // account number
  string | null, // debit card number
  string | null, // cvv
  number | null, // expiration month
  number | null, // expiration year
  string | null, // first name
  string | null, // last name
  [number, number, number] | null, // date of birth: year, month, day
  string | null, // street
  // bank link: ['p', access token, account id] (Plaid) or ['s', fca id] (Stripe); absent in older payloads
  (['p', string, string] | ['s', string] | null)?,
];

export function packSensitive(list: SensitiveFields[]): string {
  return JSON.stringify(
    list.map((s): PackedSensitive => {
      const p: PackedSensitive = [
        s.ssn,
        s.ein,
        s.accountNumber,
        s.debitCardNumber,
        s.cvv,
        s.expirationMonth,
        s.expirationYear,
        s.firstName,
        s.lastName,
        s.dateOfBirth ? [s.dateOfBirth.year, s.dateOfBirth.month, s.dateOfBirth.day] : null,
        s.street,
      ];
      // Only linked authorizers carry a twelfth field: the payload of others stays as it was.
      if (s.bankLink) p.push(s.bankLink.provider === 'plaid' ? ['p', s.bankLink.accessToken, s.bankLink.accountId] : ['s', s.bankLink.account]);
      return p;
    }),
  );
}

export function unpackSensitive(text: string): SensitiveFields[] {
  return (JSON.parse(text) as PackedSensitive[]).map((p) => ({
    ssn: p[0],
    ein: p[1],
    accountNumber: p[2],
    debitCardNumber: p[3],
    cvv: p[4],
    expirationMonth: p[5],
    expirationYear: p[6],
    firstName: p[7],
    lastName: p[8],
    dateOfBirth: p[9] ? { year: p[9][0], month: p[9][1], day: p[9][2] } : null,
    street: p[10],
    ...(p[11] ? { bankLink: p[11][0] === 'p' ? { provider: 'plaid' as const, accessToken: p[11][1], accountId: p[11][2] } : { provider: 'stripe' as const, account: p[11][1] } } : {}),
  }));
}

type PackedItem = [string, 0 | 1, string | null, string | null, string | null, QueuedAuthorizer['meta'], number | null];

export function packItems(items: QueuedAuthorizer[]): string {
  return JSON.stringify(
    items.map((a): PackedItem => [a.id, a.type === 'DEBIT_CARD' ? 1 : 0, a.routing, a.phone, a.zip, a.meta, a.threshold]),
  );
}

/** The clear part of a payload, as stored (compressed, or text from before compression). */
export function unpackItems(stored: string | Uint8Array): QueuedAuthorizer[] {
  return (JSON.parse(readPacked(stored)) as PackedItem[]).map((p) => ({
    id: p[0],
    type: p[1] === 1 ? 'DEBIT_CARD' : 'ACCOUNT_NUMBER',
    routing: p[2],
    phone: p[3],
    zip: p[4],
    meta: p[5],
    threshold: p[6],
  }));
}

/** A batch's payload as it is stored: the sensitive fields sealed, the rest packed, and how many authorizers. */
export interface PackedBatch {
  count: number;
  sealed: string;
  /** Compressed packed items (a BLOB in batch_payloads.items). */
  items: Uint8Array;
}

/**
 * Packs and seals accepted authorizers (in a worker thread too: `seal` is the vault's, given its key). None
 * accepted is a count of 0 with nothing sealed: such a batch is refused, never stored.
 */
export function packBatch(authorizers: NormalizedAuthorizer[], seal: (plaintext: Uint8Array) => string): PackedBatch {
  if (authorizers.length === 0) return { count: 0, sealed: '', items: new Uint8Array(0) };
  const items: QueuedAuthorizer[] = authorizers.map((a) => ({
    id: a.authorizerUniqueId,
    type: a.paymentType,
    routing: a.routingNumber,
    phone: a.phone,
    zip: a.zip,
    meta: a.metadata,
    threshold: a.thresholdCents,
  }));
  return {
    count: authorizers.length,
    sealed: seal(compressPacked(packSensitive(authorizers.map((a) => a.sensitive)))),
    items: compressPacked(packItems(items)),
  };
}

/** A batch's sealed payload opened: compressed (as packBatch seals it) or JSON text from before compression. */
export function openSensitive(vault: Pick<Vault, 'openBytes'>, sealed: string): SensitiveFields[] {
  return unpackSensitive(readPacked(vault.openBytes(sealed)));
}
