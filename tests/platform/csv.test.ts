import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { CsvError, csvCell, csvLine, decodeCsvBytes, metaKey, normalizeHeader, readCsv } from '../../src/platform/csv';

const bytes = (...b: number[]) => new Uint8Array(b);
const ascii = (s: string) => [...s].map((c) => c.charCodeAt(0));

describe('decodeCsvBytes', () => {
  test('strips a UTF-8 byte-order mark', () => {
    const out = decodeCsvBytes(bytes(0xef, 0xbb, 0xbf, ...ascii('a,b\r\n')));
    expect(out).toEqual({ text: 'a,b\r\n', encoding: 'utf-8' });
  });

  test('UTF-8 with non-ASCII letters stays UTF-8', () => {
    const out = decodeCsvBytes(new TextEncoder().encode('name\r\nJosé Müller\r\n'));
    expect(out).toEqual({ text: 'name\r\nJosé Müller\r\n', encoding: 'utf-8' });
  });

  test('Latin-1 bytes fall back to latin-1', () => {
    expect(decodeCsvBytes(bytes(...ascii('Jos'), 0xe9))).toEqual({ text: 'José', encoding: 'latin-1' });
  });

  test('the fallback is windows-1252: 0x80-0x9F are the Excel punctuation, not C1 controls', () => {
    expect(decodeCsvBytes(bytes(0x80, 0x93, 0x78, 0x94)).text).toBe('€“x”');
  });

  test('a BOM in front of non-UTF-8 bytes is still removed', () => {
    expect(decodeCsvBytes(bytes(0xef, 0xbb, 0xbf, 0xe9))).toEqual({ text: 'é', encoding: 'latin-1' });
  });

  test('empty input', () => {
    expect(decodeCsvBytes(bytes())).toEqual({ text: '', encoding: 'utf-8' });
  });
});

describe('readCsv', () => {
  test('CRLF, LF, CR and a mix of them', () => {
    const want = { header: ['a', 'b'], rows: [{ cells: ['1', '2'], line: 2 }, { cells: ['3', '4'], line: 3 }] };
    expect(readCsv('a,b\r\n1,2\r\n3,4\r\n')).toEqual(want);
    expect(readCsv('a,b\n1,2\n3,4')).toEqual(want);
    expect(readCsv('a,b\r1,2\r3,4\r')).toEqual(want);
    expect(readCsv('a,b\n1,2\r\n3,4\n')).toEqual(want);
  });

  test('a BOM left in the text is ignored', () => {
    expect(readCsv('\uFEFFauthorizer_unique_id\r\nx\r\n').header).toEqual(['authorizer_unique_id']);
  });

  test('quoted commas, doubled quotes and newlines', () => {
    const { rows } = readCsv('a,b,c\r\n"x, y","say ""hi""","line1\r\nline2\nline3"\r\n');
    expect(rows).toEqual([{ cells: ['x, y', 'say "hi"', 'line1\r\nline2\nline3'], line: 2 }]);
  });

  test('row numbers count records, not physical lines', () => {
    const { rows } = readCsv('id,note\r\n1,"first\r\nsecond\r\nthird"\r\n2,plain\r\n3,"a\nb"\r\n4,x\r\n');
    expect(rows.map((r) => [r.cells[0], r.line])).toEqual([
      ['1', 2],
      ['2', 3],
      ['3', 4],
      ['4', 5],
    ]);
  });

  test('blank rows are skipped but keep their row number', () => {
    const { header, rows } = readCsv('h1,h2\r\n\r\n1,a\r\n,,\r\n   \r\n2,b\r\n\r\n');
    expect(header).toEqual(['h1', 'h2']);
    expect(rows).toEqual([
      { cells: ['1', 'a'], line: 3 },
      { cells: ['2', 'b'], line: 6 },
    ]);
  });

  test('a quoted blank cell is content, not a blank row', () => {
    expect(readCsv('h\r\n" "\r\n').rows).toEqual([{ cells: [' '], line: 2 }]);
  });

  test('short rows are padded with empty cells, long rows keep their extras', () => {
    const { rows } = readCsv('a,b,c\n1\n1,2\n1,2,3,4\n');
    expect(rows.map((r) => r.cells)).toEqual([
      ['1', '', ''],
      ['1', '2', ''],
      ['1', '2', '3', '4'],
    ]);
  });

  test('unquoted cells are trimmed, quoted text is not', () => {
    const { rows } = readCsv('a,b,c\n  0123 , "  x  " ,\t"y"\n');
    expect(rows[0].cells).toEqual(['0123', '  x  ', 'y']);
  });

  test('leading zeros and numeric-looking text stay text', () => {
    expect(readCsv('zip,amt\n01234,1e3\n').rows[0].cells).toEqual(['01234', '1e3']);
  });

  test('empty and header-only input', () => {
    expect(readCsv('')).toEqual({ header: [], rows: [] });
    expect(readCsv('\r\n\r\n')).toEqual({ header: [], rows: [] });
    expect(readCsv('a,b\r\n')).toEqual({ header: ['a', 'b'], rows: [] });
  });

  const malformed: [string, string, number][] = [
    ['unclosed quote', 'h,i\n1,"abc\n2,x\n', 2],
    ['text after a closing quote', 'h,i\n1,"a"b\n', 2],
    ['quote inside an unquoted cell', 'h,i\n1,ab"c\n', 2],
    ['after a multi-line cell', 'h,i\n1,"x\ny"\n2,"a"b\n', 3],
    ['after a blank row', 'h,i\n\n1,"a"b\n', 3],
  ];
  for (const [name, text, row] of malformed) {
    test(`malformed quoting throws CsvError naming the row: ${name}`, () => {
      let caught: unknown;
      try {
        readCsv(text);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(CsvError);
      const err = caught as CsvError;
      expect(err.row).toBe(row);
      expect(err.message).toContain(`row ${row}`);
    });
  }

  test('CsvError reports the physical line when it differs from the row', () => {
    try {
      readCsv('h,i\n1,"x\ny"\n2,"a"b\n');
      throw new Error('expected a CsvError');
    } catch (err) {
      expect((err as CsvError).line).toBe(4);
      expect((err as CsvError).message).toContain('row 3 (line 4)');
    }
  });
});

describe('normalizeHeader', () => {
  const table: [string, string][] = [
    ['Authorizer ID', 'authorizer_id'],
    ['Payment-Amount ($)', 'payment_amount'],
    ['authorizer_unique_id', 'authorizer_unique_id'],
    ['  Return   Code  ', 'return_code'],
    ['ZIP_Code', 'zip_code'],
    ['Settled At:', 'settled_at'],
    ['__status__', 'status'],
    ['street address line 1', 'street_address_line_1'],
    ['e-mail / phone', 'e_mail_phone'],
    ['Código Postal', 'código_postal'],
    ['\uFEFFBatch ID', 'batch_id'],
    ['meta_Loan ID', 'meta_loan_id'],
    ['$$$', ''],
    ['', ''],
  ];
  for (const [input, want] of table) {
    test(`${JSON.stringify(input)} → ${JSON.stringify(want)}`, () => {
      expect(normalizeHeader(input)).toBe(want);
    });
  }

  test('is idempotent', () => {
    const header = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.string({ unit: fc.constantFrom('A', 'b', 'É', 'é', 'İ', 'ß', '1', ' ', '-', '_', '$', '(', '\u0301', '\t') }),
    );
    fc.assert(
      fc.property(header, (h) => {
        const once = normalizeHeader(h);
        expect(normalizeHeader(once)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('metaKey', () => {
  const table: [string, string | null][] = [
    ['meta_Loan ID', 'Loan ID'],
    ['META_loanId', 'loanId'],
    ['  meta_region  ', 'region'],
    ['meta_ spaced ', 'spaced'],
    ['meta_a_b', 'a_b'],
    ['meta_', null],
    ['meta_   ', null],
    ['meta', null],
    ['metadata', null],
    ['Meta Loan', null],
    ['authorizer_unique_id', null],
  ];
  for (const [input, want] of table) {
    test(`${JSON.stringify(input)} → ${JSON.stringify(want)}`, () => {
      expect(metaKey(input)).toBe(want);
    });
  }
});

describe('csvCell and csvLine', () => {
  test('empty values', () => {
    expect(csvCell(null)).toBe('');
    expect(csvCell(undefined)).toBe('');
    expect(csvCell('')).toBe('');
  });

  test('plain values are written as they are', () => {
    expect(csvCell('SUCCESS')).toBe('SUCCESS');
    expect(csvCell('José')).toBe('José');
    expect(csvCell(1234.5)).toBe('1234.5');
    expect(csvCell(0)).toBe('0');
    expect(csvCell(true)).toBe('true');
    expect(csvCell(false)).toBe('false');
  });

  test('RFC 4180 quoting', () => {
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('a\nb')).toBe('"a\nb"');
    expect(csvCell('a\r\nb')).toBe('"a\r\nb"');
    expect(csvCell('"')).toBe('""""');
  });

  test('edge whitespace is quoted so that reading does not trim it', () => {
    expect(csvCell(' x')).toBe('" x"');
    expect(csvCell('x ')).toBe('"x "');
    expect(csvCell('x\u00a0')).toBe('"x\u00a0"');
    expect(csvCell('a b')).toBe('a b');
  });

  test('text that a spreadsheet would run as a formula is neutralised', () => {
    expect(csvCell('=SUM(A1)')).toBe("'=SUM(A1)");
    expect(csvCell('+1')).toBe("'+1");
    expect(csvCell('-1')).toBe("'-1");
    expect(csvCell('@x')).toBe("'@x");
    expect(csvCell('\tx')).toBe("'\tx");
    expect(csvCell('\rx')).toBe('"\'\rx"');
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe('"\'=HYPERLINK(""http://x"",""y"")"');
    // Numeric-looking text is text: callers pass numbers as numbers.
    expect(csvCell('-12.50')).toBe("'-12.50");
    expect(csvCell('a=b')).toBe('a=b');
  });

  test('numbers are never neutralised', () => {
    expect(csvCell(-5)).toBe('-5');
    expect(csvCell(-12.5)).toBe('-12.5');
    fc.assert(fc.property(fc.double(), (n) => csvCell(n) === String(n)));
  });

  test('csvLine joins with commas and ends with CRLF', () => {
    expect(csvLine(['a', 1, null, 'b,c', undefined, true])).toBe('a,1,,"b,c",,true\r\n');
    expect(csvLine([])).toBe('\r\n');
  });
});

describe('round trip', () => {
  const neutralised = (s: string) => (/^[=+\-@\t\r]/.test(s) ? "'" + s : s);

  const cell = fc.oneof(
    fc.string({ unit: fc.constantFrom(',', '"', '\r', '\n', ' ', '\t', 'a', 'Z', '0', 'é', '€', '=', '-', '+', '@', "'") }),
    fc.string({ unit: 'binary' }),
    fc.string(),
  );

  const table = fc.integer({ min: 1, max: 6 }).chain((width) => {
    const row = fc.array(cell, { minLength: width, maxLength: width }).filter((r) => r.some((c) => c !== ''));
    return fc.tuple(row, fc.array(row, { maxLength: 8 }));
  });

  test('csvLine output reads back as the same table, with neutralised text and record numbers', () => {
    fc.assert(
      fc.property(table, ([header, rows]) => {
        const text = csvLine(header) + rows.map((r) => csvLine(r)).join('');
        const read = readCsv(text);
        expect(read.header).toEqual(header.map(neutralised));
        expect(read.rows).toEqual(rows.map((r, i) => ({ cells: r.map(neutralised), line: i + 2 })));
      }),
      { numRuns: 1000 },
    );
  });

  test('round trip through bytes with a BOM, as the export is downloaded and uploaded again', () => {
    fc.assert(
      fc.property(table, ([header, rows]) => {
        const text = csvLine(header) + rows.map((r) => csvLine(r)).join('');
        const encoded = new TextEncoder().encode('\uFEFF' + text);
        const decoded = decodeCsvBytes(encoded);
        expect(decoded).toEqual({ text, encoding: 'utf-8' });
        expect(readCsv(decoded.text).rows.length).toBe(rows.length);
      }),
      { numRuns: 300 },
    );
  });
});
