import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Vault, VaultError, generateVaultKey, keyId, loadVault } from '../../src/platform/vault';

const dir = mkdtempSync(join(tmpdir(), 'drs-vault-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const freshFile = () => join(dir, `v${++n}`, 'vault.key');

/** Flips one bit of byte `at` (negative counts from the end) of a base64url field. */
function flip(field: string, at: number): string {
  const bytes = Buffer.from(field, 'base64url');
  const i = at < 0 ? bytes.length + at : at;
  bytes[i] = bytes[i]! ^ 0x01;
  return bytes.toString('base64url');
}

function vaultError(fn: () => unknown): VaultError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(VaultError);
    return e as VaultError;
  }
  throw new Error('expected a VaultError');
}

describe('Vault', () => {
  const vault = new Vault(generateVaultKey());

  test('bytes that are not UTF-8 text are sealed, opened and re-sealed byte for byte', () => {
    const bytes = new Uint8Array([0x28, 0xb5, 0x2f, 0xfd, 0xff, 0xfe, 0x00, 0xc3, 0x28, 0x80]);
    const sealed = vault.sealBytes(bytes);
    expect(sealed.startsWith(`v1.${vault.currentKeyId}.`)).toBe(true);
    expect([...vault.openBytes(sealed)]).toEqual([...bytes]);
    // Under a new key (the old one kept), a re-sealed value is the same bytes; a detour through text is not.
    const next = new Vault(generateVaultKey(), [Buffer.from(vault.sealingKey())]);
    const resealed = next.reseal(sealed);
    expect(next.needsReseal(resealed)).toBe(false);
    expect([...next.openBytes(resealed)]).toEqual([...bytes]);
    expect([...next.openBytes(next.seal(next.open(sealed)))]).not.toEqual([...bytes]);
    // Text sealed either way opens the same.
    expect(vault.open(vault.sealBytes(Buffer.from('ünïcødé ✓', 'utf8')))).toBe('ünïcødé ✓');
    expect(next.open(next.reseal(vault.seal('123-45-6789')))).toBe('123-45-6789');
  });

  test('round trip, including empty and non-ASCII text', () => {
    for (const s of ['', 'hello', '123-45-6789', 'ünïcødé ✓ 💳', 'x'.repeat(100_000)]) {
      expect(vault.open(vault.seal(s))).toBe(s);
    }
    const obj = { ssn: '123456789', nested: { n: 1, ok: true }, list: [1, 'two'] };
    expect(vault.openJson<typeof obj>(vault.sealJson(obj))).toEqual(obj);
  });

  test('sealed format: v1.<key id>.<iv>.<ciphertext+tag>, with no plaintext in it', () => {
    const sealed = vault.seal('0009876543');
    const parts = sealed.split('.');
    expect(parts).toHaveLength(4);
    expect(parts[0]).toBe('v1');
    expect(parts[1]).toBe(vault.currentKeyId);
    expect(parts[1]).toMatch(/^[0-9a-f]{8}$/);
    expect(Buffer.from(parts[2]!, 'base64url')).toHaveLength(12);
    expect(sealed).not.toContain('9876543');
  });

  test('the same plaintext seals to different ciphertexts', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) seen.add(vault.seal('same'));
    expect(seen.size).toBe(20);
    const ivs = new Set([...seen].map((s) => s.split('.')[2]));
    expect(ivs.size).toBe(20);
  });

  test('a flipped character in the ciphertext → VaultError', () => {
    const sealed = vault.seal('secret value');
    const parts = sealed.split('.');
    for (const at of [0, 5, -17, -1]) { // ciphertext bytes, first and last byte of the tag
      const tampered = [parts[0], parts[1], parts[2], flip(parts[3]!, at)].join('.');
      expect(tampered).not.toBe(sealed);
      vaultError(() => vault.open(tampered));
    }
  });

  test('a flipped character in the IV → VaultError', () => {
    const parts = vault.seal('secret value').split('.');
    vaultError(() => vault.open([parts[0], parts[1], flip(parts[2]!, 3), parts[3]].join('.')));
  });

  test('a changed key id → VaultError (unknown key)', () => {
    const parts = vault.seal('secret value').split('.');
    const kid = parts[1]!;
    const changed = (kid[0] === '0' ? '1' : '0') + kid.slice(1);
    const e = vaultError(() => vault.open([parts[0], changed, parts[2], parts[3]].join('.')));
    expect(e.message).toContain('unknown');
  });

  test('truncated, reordered and foreign formats → VaultError', () => {
    const sealed = vault.seal('secret value');
    const parts = sealed.split('.');
    for (const bad of [
      '',
      'plain text',
      parts.slice(0, 3).join('.'),
      [...parts, 'extra'].join('.'),
      ['v2', ...parts.slice(1)].join('.'),
      [parts[0], parts[1], parts[2], parts[3]!.slice(0, 10)].join('.'),
      [parts[0], parts[1], parts[2] + 'AAAA', parts[3]].join('.'),
    ]) {
      vaultError(() => vault.open(bad));
    }
  });

  test('a value sealed by a different key → VaultError', () => {
    const other = new Vault(generateVaultKey());
    vaultError(() => vault.open(other.seal('hello')));
  });

  test('a different key that claims the same key id → VaultError (authentication fails)', () => {
    const other = new Vault(generateVaultKey());
    const [v, , iv, body] = other.seal('hello').split('.');
    vaultError(() => vault.open([v, vault.currentKeyId, iv, body].join('.')));
  });

  test('a key of the wrong length is refused', () => {
    vaultError(() => new Vault(Buffer.alloc(16)));
  });

  test('older keys still open their values; needsReseal tells old from current', () => {
    const oldKey = generateVaultKey();
    const old = new Vault(oldKey);
    const sealedOld = old.seal('legacy');
    const rotated = new Vault(generateVaultKey(), [oldKey]);
    expect(rotated.currentKeyId).not.toBe(old.currentKeyId);
    expect(rotated.open(sealedOld)).toBe('legacy');
    expect(rotated.needsReseal(sealedOld)).toBe(true);
    const resealed = rotated.seal(rotated.open(sealedOld));
    expect(rotated.needsReseal(resealed)).toBe(false);
    expect(resealed.split('.')[1]).toBe(rotated.currentKeyId);
    // The old vault alone cannot read what the new key sealed.
    vaultError(() => old.open(resealed));
  });

  test('keyId is the first 8 hex of the key’s SHA-256, stable', () => {
    const k = Buffer.alloc(32, 1);
    expect(keyId(k)).toBe(new Bun.CryptoHasher('sha256').update(k).digest('hex').slice(0, 8));
    expect(new Vault(k).currentKeyId).toBe(keyId(k));
  });

  test('derive is deterministic per label and differs across labels and keys', () => {
    const k = generateVaultKey();
    const a = new Vault(k);
    const b = new Vault(k);
    expect(a.derive('page-tokens').equals(b.derive('page-tokens'))).toBe(true);
    expect(a.derive('page-tokens').equals(a.derive('other'))).toBe(false);
    expect(a.derive('page-tokens').equals(new Vault(generateVaultKey()).derive('page-tokens'))).toBe(false);
  });
});

describe('loadVault', () => {
  test('creates the key file with mode 0600 (and its folder) on first load, then reuses it', () => {
    const file = freshFile();
    const first = loadVault({ vaultKey: null, vaultKeyFile: file });
    expect(first.created).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(Buffer.from(text.trim(), 'base64')).toHaveLength(32);

    const second = loadVault({ vaultKey: null, vaultKeyFile: file });
    expect(second.created).toBe(false);
    expect(second.vault.currentKeyId).toBe(first.vault.currentKeyId);
    expect(second.vault.open(first.vault.seal('x'))).toBe('x');
    expect(readFileSync(file, 'utf8')).toBe(text);
  });

  test('VAULT_KEY wins over the file and creates no file', () => {
    const file = freshFile();
    const key = generateVaultKey();
    const { vault, created } = loadVault({ vaultKey: key.toString('base64'), vaultKeyFile: file });
    expect(created).toBe(false);
    expect(vault.currentKeyId).toBe(keyId(key));
    expect(existsSync(file)).toBe(false);
  });

  test('a key file that does not hold 32 bytes → VaultError naming the file', () => {
    const file = freshFile();
    loadVault({ vaultKey: null, vaultKeyFile: file });
    writeFileSync(file, Buffer.alloc(16).toString('base64'));
    const e = vaultError(() => loadVault({ vaultKey: null, vaultKeyFile: file }));
    expect(e.message).toContain(file);
  });

  test('keys listed in <file>.old still open values sealed under them', () => {
    const file = freshFile();
    const old1 = generateVaultKey();
    const old2 = generateVaultKey();
    const first = loadVault({ vaultKey: null, vaultKeyFile: file }); // creates the folder and a current key
    writeFileSync(`${file}.old`, `${old1.toString('base64')}\n\n${old2.toString('base64')}\n`, { mode: 0o600 });
    const { vault } = loadVault({ vaultKey: null, vaultKeyFile: file });
    expect(vault.currentKeyId).toBe(first.vault.currentKeyId);
    const s1 = new Vault(old1).seal('one');
    const s2 = new Vault(old2).seal('two');
    expect(vault.open(s1)).toBe('one');
    expect(vault.open(s2)).toBe('two');
    expect(vault.needsReseal(s1)).toBe(true);
    expect(vault.needsReseal(vault.seal('three'))).toBe(false);
    // New values are sealed under the current key, never an old one.
    expect(vault.seal('x').split('.')[1]).toBe(first.vault.currentKeyId);
  });

  test('a bad line in <file>.old → VaultError', () => {
    const file = freshFile();
    loadVault({ vaultKey: null, vaultKeyFile: file });
    writeFileSync(`${file}.old`, 'not-a-key\n');
    vaultError(() => loadVault({ vaultKey: null, vaultKeyFile: file }));
  });
});
