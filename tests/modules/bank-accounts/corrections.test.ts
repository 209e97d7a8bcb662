// How a Notification of Change's code and corrected data are read: Nacha's fixed positions and the separated
// forms exports write; every unreadable form refused with its reason; never a throw, whatever the text.
import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { readChangeCode, readCorrection } from '../../../src/modules/bank-accounts/corrections';
import { CHANGE_CODES } from '../../../db/schema/enums';

const ROUTING = '011000015';
const pad = (s: string, n: number) => s.padEnd(n, ' ');

describe('change codes', () => {
  test('as banks and exports write them', () => {
    for (const [text, code] of [
      ['C01', 'C01'],
      ['c1', 'C01'],
      ['C01 - Incorrect DFI Account Number', 'C01'],
      ['NOC C03', 'C03'],
      ['noc: c07', 'C07'],
      [' C13 ', 'C13'],
    ] as const) {
      expect(readChangeCode(text)).toBe(code);
    }
    for (const text of ['C08', 'C14', 'C61', 'R01', '01', 'C', 'C011', '']) expect(readChangeCode(text)).toBeNull();
  });
});

describe('corrected data', () => {
  test('each code in Nacha’s fixed positions and in separated forms', () => {
    expect(readCorrection('C01', '0009876543')).toEqual({ ok: true, correction: { accountNumber: '0009876543' } });
    expect(readCorrection('C01', '000-987 6543')).toEqual({ ok: true, correction: { accountNumber: '0009876543' } });
    expect(readCorrection('C02', ROUTING)).toEqual({ ok: true, correction: { routing: ROUTING } });
    // C03: routing in 1–9, three spaces, account in 13–29.
    expect(readCorrection('C03', `${ROUTING}   ${pad('12345678', 17)}`)).toEqual({ ok: true, correction: { routing: ROUTING, accountNumber: '12345678' } });
    expect(readCorrection('C03', `${ROUTING}/12345678`)).toEqual({ ok: true, correction: { routing: ROUTING, accountNumber: '12345678' } });
    expect(readCorrection('C05', '37')).toEqual({ ok: true, correction: { accountType: 'savings' } });
    expect(readCorrection('C05', '27')).toEqual({ ok: true, correction: { accountType: 'checking' } });
    expect(readCorrection('C05', 'Savings')).toEqual({ ok: true, correction: { accountType: 'savings' } });
    // C06: account in 1–17, three spaces, transaction code in 21–22.
    expect(readCorrection('C06', `${pad('12345678', 17)}   37`)).toEqual({ ok: true, correction: { accountNumber: '12345678', accountType: 'savings' } });
    expect(readCorrection('C06', '1234567837')).toEqual({ ok: true, correction: { accountNumber: '12345678', accountType: 'savings' } });
    // C07: routing 1–9, account 10–26, transaction code 27–28.
    expect(readCorrection('C07', `${ROUTING}${'12345678'.padStart(17, '0')}27`)).toEqual({
      ok: true,
      correction: { routing: ROUTING, accountNumber: '00000000012345678', accountType: 'checking' },
    });
    expect(readCorrection('C07', `${ROUTING} | 12345678 | 32`)).toEqual({ ok: true, correction: { routing: ROUTING, accountNumber: '12345678', accountType: 'savings' } });
    expect(readCorrection('C09', 'ID-778899')).toEqual({ ok: true, correction: { individualId: 'ID-778899' } });
    expect(readCorrection('C13', '')).toEqual({ ok: true, correction: {} });
  });

  test('what cannot be read is refused with the reason, never guessed', () => {
    for (const [code, text] of [
      ['C01', ''],
      ['C01', '123456789012345678'], // 18 characters: past Nacha's 17
      ['C01', '12#45'],
      ['C02', '123456789'], // fails the ABA checksum
      ['C02', '11000001'], // a lost leading zero
      ['C03', ROUTING],
      ['C03', `${ROUTING} 123 456`],
      ['C05', '99'],
      ['C06', '12345678 45'],
      ['C07', `${ROUTING} 12345678`],
      ['C09', 'x'.repeat(23)],
    ] as const) {
      const r = readCorrection(code, text);
      expect(r.ok, `${code} ${text}`).toBe(false);
      if (!r.ok) expect(r.problem).toContain(code);
    }
  });

  test('any text of any code: an answer, never a throw, and a number read back is 1 to 17 letters or digits', () => {
    fc.assert(
      fc.property(fc.constantFrom(...CHANGE_CODES), fc.string({ maxLength: 64 }), (code, text) => {
        const r = readCorrection(code, text);
        if (r.ok && r.correction.accountNumber !== undefined) expect(r.correction.accountNumber).toMatch(/^[A-Za-z0-9]{1,17}$/);
        if (r.ok && r.correction.routing !== undefined) expect(r.correction.routing).toMatch(/^\d{9}$/);
      }),
      { numRuns: 2000 },
    );
  });
});
