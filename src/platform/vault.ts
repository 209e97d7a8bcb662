import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

// AES-256-GCM sealing of secrets and personal data. A sealed value reads
//   v1.<key id>.<iv base64url>.<ciphertext+tag base64url>
// The key id lets a vault hold old keys while everything is re-sealed under a new one.

export class VaultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'VaultError';
  }
}

export const keyId = (key: Buffer): string => createHash('sha256').update(key).digest('hex').slice(0, 8);

export class Vault {
  private readonly keys = new Map<string, Buffer>();
  readonly currentKeyId: string;

  constructor(current: Buffer, older: Buffer[] = []) {
    if (current.length !== 32) throw new VaultError('Vault key must be 32 bytes');
    this.currentKeyId = keyId(current);
    this.keys.set(this.currentKeyId, current);
    for (const k of older) this.keys.set(keyId(k), k);
  }

  /**
   * The current key, for a worker thread of this process that seals with it (`new Vault(key)` there): copied
   * to it in memory, never written or logged.
   */
  sealingKey(): Uint8Array {
    return new Uint8Array(this.keys.get(this.currentKeyId)!);
  }

  seal(plaintext: string): string {
    return this.sealBytes(Buffer.from(plaintext, 'utf8'));
  }

  /** Seals bytes as they are (a compressed payload, say); the sealed form is the same as a string's. */
  sealBytes(plaintext: Uint8Array): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentKeyId)!, iv);
    const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return `v1.${this.currentKeyId}.${iv.toString('base64url')}.${body.toString('base64url')}`;
  }

  open(sealed: string): string {
    return this.openBytes(sealed).toString('utf8');
  }

  openBytes(sealed: string): Buffer {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== 'v1') throw new VaultError('Not a sealed value');
    const key = this.keys.get(parts[1]!);
    if (!key) throw new VaultError(`Sealed with an unknown vault key (${parts[1]})`);
    const iv = Buffer.from(parts[2]!, 'base64url');
    const body = Buffer.from(parts[3]!, 'base64url');
    if (iv.length !== 12 || body.length < 16) throw new VaultError('Sealed value is malformed');
    const decipher = createDecipheriv('aes-256-gcm', key, iv);
    decipher.setAuthTag(body.subarray(body.length - 16));
    try {
      return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]);
    } catch {
      throw new VaultError('Sealed value failed authentication (tampered, or sealed with another key)');
    }
  }

  /** The same plaintext, byte for byte, sealed under the current key (text or not). */
  reseal(sealed: string): string {
    return this.sealBytes(this.openBytes(sealed));
  }

  sealJson(value: unknown): string {
    return this.seal(JSON.stringify(value));
  }
  openJson<T>(sealed: string): T {
    return JSON.parse(this.open(sealed)) as T;
  }

  /** A sub-key for another purpose (for example signing page tokens), bound to the current key. */
  derive(label: string): Buffer {
    return createHmac('sha256', this.keys.get(this.currentKeyId)!).update(label).digest();
  }

  /**
   * A keyed hash for one purpose: HMAC-SHA-256, in hex, under the sub-key `label` derives (the same on every
   * replica with the same key). Bound to the current key like `derive`: for state kept only for a while
   * (throttles, held files, rate buckets), never for a hash that must outlive a rotation.
   */
  hasher(label: string): (value: string) => string {
    let key: Buffer | null = null;
    return (value) => createHmac('sha256', (key ??= this.derive(label))).update(value).digest('hex');
  }

  /** True when the value is sealed under a key other than the current one. */
  needsReseal(sealed: string): boolean {
    return sealed.split('.')[1] !== this.currentKeyId;
  }

  /** Whether values sealed under this key id open here (the current key or an older one). */
  holdsKey(id: string): boolean {
    return this.keys.has(id);
  }
}

export const generateVaultKey = (): Buffer => randomBytes(32);

function decodeKey(text: string, source: string): Buffer {
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new VaultError(`${source} does not hold a 32-byte base64 key`);
  return key;
}

/**
 * The vault key from VAULT_KEY, else from VAULT_KEY_FILE, which is created (mode 0600) when missing.
 * Older keys, in VAULT_OLD_KEYS or kept beside the file as `<file>.old` lines, stay readable for values not
 * yet re-sealed.
 */
export function loadVault(opts: { vaultKey: string | null; vaultKeyFile: string; vaultOldKeys?: readonly string[] }): { vault: Vault; created: boolean } {
  const older: Buffer[] = (opts.vaultOldKeys ?? []).map((k) => decodeKey(k, 'VAULT_OLD_KEYS'));
  const oldFile = `${opts.vaultKeyFile}.old`;
  if (existsSync(oldFile)) {
    for (const line of readFileSync(oldFile, 'utf8').split('\n')) if (line.trim()) older.push(decodeKey(line, oldFile));
  }
  if (opts.vaultKey) return { vault: new Vault(decodeKey(opts.vaultKey, 'VAULT_KEY'), older), created: false };
  if (existsSync(opts.vaultKeyFile)) {
    return { vault: new Vault(decodeKey(readFileSync(opts.vaultKeyFile, 'utf8'), opts.vaultKeyFile), older), created: false };
  }
  if (!existsSync(dirname(opts.vaultKeyFile))) mkdirSync(dirname(opts.vaultKeyFile), { recursive: true, mode: 0o700 });
  const key = generateVaultKey();
  writeFileSync(opts.vaultKeyFile, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(opts.vaultKeyFile, 0o600);
  return { vault: new Vault(key, older), created: true };
}

/** A column that holds sealed values, registered by the feature that owns it (modules/index.ts). */
export interface SealedColumn {
  table: string;
  key: string;
  column: string;
}
