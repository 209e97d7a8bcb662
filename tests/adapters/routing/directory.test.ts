import { describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../src/config';
import { RoutingDirectory } from '../../../src/adapters/routing/directory';
import { loadRoutingDirectory } from '../../../src/adapters/routing';

const FIXTURE = join(import.meta.dir, '../../fixtures/fedach-sample.txt');

describe('RoutingDirectory', () => {
  test('built-in sandbox banks', () => {
    const dir = new RoutingDirectory();
    expect(dir.size).toBe(4);
    expect(dir.lookup('110000000')).toEqual({ name: 'Sandbox Bank', support: 'supported' });
    // Read as the supported bank; its accounts have no validation evidence (the enrollment's sandbox link).
    expect(dir.lookup('110000039')).toEqual({ name: 'Sandbox Unvalidated Bank', support: 'supported' });
    expect(dir.lookup('110000013')).toEqual({ name: 'Sandbox Testing Bank', support: 'testing' });
    expect(dir.lookup('110000026')).toEqual({ name: 'Sandbox Unsupported Bank', support: 'unsupported' });
    expect(dir.lookup('021000021')).toBeNull();
  });

  test('loads a FedACH file, counting blank and malformed lines', () => {
    const { directory, loaded, skipped } = RoutingDirectory.fromFedAchFile(FIXTURE);
    // Blank line, a line that is not a record, and a record whose routing number fails the checksum.
    expect({ loaded, skipped }).toEqual({ loaded: 7, skipped: 3 });
    // Four sandbox banks plus the file's records, minus the file's copy of a sandbox number.
    expect(directory.size).toBe(10);
    expect(directory.lookup('021000021')).toEqual({ name: 'JPMORGAN CHASE BANK, NA', support: 'supported' });
    expect(directory.lookup('026009593')).toEqual({ name: 'BANK OF AMERICA, N.A.', support: 'supported' });
    expect(directory.lookup('011000015')).toEqual({ name: 'FEDERAL RESERVE BANK', support: 'supported' });
    expect(directory.lookup('021000022')).toBeNull();
  });

  test('a type-2 record resolves to the institution at its new routing number', () => {
    const { directory } = RoutingDirectory.fromFedAchFile(FIXTURE);
    expect(directory.lookup('211370286')).toEqual({ name: 'HARBOR NATIONAL BANK', support: 'supported' });
    expect(directory.lookup('211370150')).toEqual({ name: 'HARBOR NATIONAL BANK', support: 'supported' });
  });

  test('a type-2 record whose new number is not in the file keeps its own name', () => {
    const { directory } = RoutingDirectory.fromFedAchFile(FIXTURE);
    expect(directory.lookup('061000036')).toEqual({ name: 'LOST MERGER TRUST CO', support: 'supported' });
    expect(directory.lookup('072000096')).toBeNull();
  });

  test('sandbox banks win over file records for the same number', () => {
    const { directory } = RoutingDirectory.fromFedAchFile(FIXTURE);
    expect(directory.lookup('110000000')).toEqual({ name: 'Sandbox Bank', support: 'supported' });
  });

  test('records with their trailing filler stripped still load; longer lines do not', async () => {
    const lines = (await Bun.file(FIXTURE).text()).split('\n');
    const jpm = lines.find((l) => l.startsWith('021000021'))!;
    const dir = new RoutingDirectory();
    expect(dir.loadFedAch(`${jpm.trimEnd()}\r\n${jpm}X\r\n`)).toEqual({ loaded: 1, skipped: 1 });
    expect(dir.lookup('021000021')?.name).toBe('JPMORGAN CHASE BANK, NA');
  });

  test('records with a bad office code, record type or new routing number are skipped', async () => {
    const lines = (await Bun.file(FIXTURE).text()).split('\n');
    const jpm = lines.find((l) => l.startsWith('021000021'))!;
    const at = (line: string, col: number, value: string) => line.slice(0, col - 1) + value + line.slice(col - 1 + value.length);
    const dir = new RoutingDirectory();
    const bad = [
      at(jpm, 10, 'X'), // office code
      at(jpm, 20, '3'), // record type
      at(at(jpm, 20, '2'), 27, '123456789'), // type 2 pointing at an invalid number
      at(jpm, 36, ' '.repeat(36)), // no name
    ];
    expect(dir.loadFedAch(bad.join('\n'))).toEqual({ loaded: 0, skipped: 4 });
  });
});

describe('loadRoutingDirectory', () => {
  test('no file: sandbox banks only', () => {
    const { directory, loaded, skipped } = loadRoutingDirectory(null);
    expect({ size: directory.size, loaded, skipped }).toEqual({ size: 4, loaded: 0, skipped: 0 });
  });

  test('with the file', () => {
    const { directory, loaded, skipped } = loadRoutingDirectory(FIXTURE);
    expect({ size: directory.size, loaded, skipped }).toEqual({ size: 10, loaded: 7, skipped: 3 });
  });

  test('an empty file loads nothing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fedach-'));
    try {
      const path = join(dir, 'empty.txt');
      writeFileSync(path, '');
      expect(loadRoutingDirectory(path)).toMatchObject({ loaded: 0, skipped: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a missing file stops the start with a message naming the variable', () => {
    expect(() => loadRoutingDirectory('/nonexistent/fedach.txt')).toThrow(ConfigError);
    expect(() => loadRoutingDirectory('/nonexistent/fedach.txt')).toThrow(/ROUTING_DIRECTORY_FILE/);
  });
});
