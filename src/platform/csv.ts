import { parse, type Options } from 'csv-parse/sync';
import { parse as parseStream } from 'csv-parse';
import { once } from 'node:events';

// CSV reading for the balance CSV upload and writing for the balance CSV export.
//
// Reading is lenient where spreadsheets and hand edits differ (line endings, blank rows, short rows, spaces
// around quoted fields) and strict where guessing would silently shift data between columns (broken quoting).
// Writing follows RFC 4180 with CRLF line ends and guards text cells against formula injection.

export type CsvValue = string | number | boolean | null | undefined;

export interface CsvRow {
  cells: string[];
  /** Row number as a spreadsheet shows it: one per record, so a quoted multi-line cell does not shift it. */
  line: number;
}

export interface CsvTable {
  header: string[];
  rows: CsvRow[];
}

/** More data rows than the caller accepts: reading stopped at the first one over, the rest never parsed. */
export class CsvRowLimit extends Error {
  constructor(readonly maxRows: number) {
    super(`more than ${maxRows} data rows`);
    this.name = 'CsvRowLimit';
  }
}

/** Broken quoting; `row` is the record (header = 1) and `line` the physical line where parsing stopped. */
export class CsvError extends Error {
  constructor(
    message: string,
    readonly row: number,
    readonly line: number,
  ) {
    super(message);
    this.name = 'CsvError';
  }
}

// ---------------------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------------------

// Decoders are stateless for one-shot decode() calls, so one instance each serves every upload.
// ignoreBOM: the BOM is removed from the bytes first; a second one would be content, not a marker.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
// Windows-1252 rather than strict ISO-8859-1: non-UTF-8 uploads come from Excel on Windows ("CSV (Comma
// delimited)"), which writes cp1252, where 0x80-0x9F are €, curly quotes and dashes rather than C1 controls.
// It agrees with Latin-1 on every other byte, and it cannot fail, so any byte sequence decodes.
const latin1Decoder = new TextDecoder('windows-1252');

/**
 * Decodes an uploaded file. Strict UTF-8 first, because a lenient decode would turn Latin-1 accented letters
 * into U+FFFD without any sign; when the bytes are not valid UTF-8 they are read as windows-1252 and
 * `encoding` is 'latin-1' so the caller can report that the file was not UTF-8.
 */
export function decodeCsvBytes(bytes: Uint8Array): { text: string; encoding: 'utf-8' | 'latin-1' } {
  const body =
    bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes;
  try {
    return { text: utf8Decoder.decode(body), encoding: 'utf-8' };
  } catch {
    return { text: latin1Decoder.decode(body), encoding: 'latin-1' };
  }
}

// ---------------------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------------------

const PARSE_OPTIONS: Options = {
  // Listed rather than auto-detected: auto-detection locks onto the first ending it meets, and files that
  // were appended to by hand mix LF and CRLF. CRLF comes first so it is not read as CR then an empty line.
  record_delimiter: ['\r\n', '\n', '\r'],
  relax_column_count: true,
  // Trims unquoted cells and the space around quoted ones (`a, "b"` is common in hand-written files and is
  // otherwise a quoting error); text inside quotes is never touched.
  trim: true,
  // Blank records are kept by the parser so that the array index is the record number; they are dropped below.
  skip_empty_lines: false,
  // Callers may hand over text that did not pass through decodeCsvBytes.
  bom: true,
};

/**
 * Parses CSV text into a header and data rows.
 *
 * - Blank records (every cell empty after trimming, e.g. an empty line or `,,,`) are skipped but still take a
 *   row number, so `line` matches the row a spreadsheet shows. The header is the first non-blank record;
 *   when the file starts with it, it is row 1 and the first data row is 2.
 * - Rows shorter than the header are padded with '' so every header column can be read by index; longer
 *   rows keep their extra cells so the caller can decide whether that is an error.
 * - Header cells are returned as written; see normalizeHeader and metaKey.
 * - With `maxRows`, more data rows than that throw CsvRowLimit as soon as the first one over is read.
 */
export function readCsv(text: string, opts: { maxRows?: number } = {}): CsvTable {
  let records: string[][];
  try {
    records = parse(text, opts.maxRows === undefined ? PARSE_OPTIONS : { ...PARSE_OPTIONS, on_record: rowLimit(opts.maxRows) });
  } catch (err) {
    if (err instanceof CsvRowLimit) throw err;
    throw toCsvError(err);
  }

  return tableOf(records);
}

const SLICE_CHARS = 64 * 1024;
const YIELD_RECORDS = 500;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * readCsv without holding the event loop: the same parser and options, fed 64 KB at a time, with a turn of
 * the event loop for other requests between slices and every 500 records. The row cap stops it the same way.
 */
export async function readCsvAsync(text: string, opts: { maxRows?: number } = {}): Promise<CsvTable> {
  const parser = parseStream(opts.maxRows === undefined ? PARSE_OPTIONS : { ...PARSE_OPTIONS, on_record: rowLimit(opts.maxRows) });
  const feed = (async () => {
    for (let i = 0; i < text.length; i += SLICE_CHARS) {
      if (!parser.write(text.slice(i, i + SLICE_CHARS))) await once(parser, 'drain');
      else await nextTurn();
    }
    parser.end();
  })();
  feed.catch(() => undefined); // a parse error reaches the reader through the iteration
  const records: string[][] = [];
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      records.push(record);
      if (records.length % YIELD_RECORDS === 0) await nextTurn();
    }
  } catch (err) {
    if (err instanceof CsvRowLimit) throw err;
    throw toCsvError(err);
  } finally {
    parser.destroy();
  }
  return tableOf(records);
}

/** Records → header and data rows: blank records skipped (keeping their numbers), short rows padded. */
function tableOf(records: string[][]): CsvTable {
  let header: string[] | null = null;
  const rows: CsvRow[] = [];
  for (let i = 0; i < records.length; i++) {
    const cells = records[i]!;
    if (isBlank(cells)) continue;
    if (header === null) {
      header = cells;
      continue;
    }
    while (cells.length < header.length) cells.push('');
    rows.push({ cells, line: i + 1 });
  }
  return { header: header ?? [], rows };
}

/**
 * Counts data rows (non-blank records after the header) as the parser completes them and throws CsvRowLimit
 * at the first one over the limit, which stops the parser there: a file far over the limit costs no more
 * than one just over it.
 */
function rowLimit(maxRows: number) {
  let header = false;
  let rows = 0;
  return (record: string[]) => {
    if (!isBlank(record)) {
      if (!header) header = true;
      else if (++rows > maxRows) throw new CsvRowLimit(maxRows);
    }
    return record;
  };
}

function isBlank(cells: string[]): boolean {
  for (let i = 0; i < cells.length; i++) if (cells[i] !== '') return false;
  return true;
}

export function toCsvError(err: unknown): unknown {
  // csv-parse reports data problems as errors carrying a string `code` and counters; anything else is a bug
  // and should surface as it is rather than as a 400 about the file.
  if (!(err instanceof Error) || typeof (err as { code?: unknown }).code !== 'string') return err;
  const info = err as Error & { records?: number; lines?: number };
  // `records` counts the records completed before the failure, and blank records are records here too,
  // so the failing one is the next: the same numbering as CsvRow.line.
  const row = (info.records ?? 0) + 1;
  const line = info.lines ?? row;
  const where = line === row ? `row ${row}` : `row ${row} (line ${line})`;
  // The parser's own text can quote the offending cell; the message names the problem in its own words.
  const problem = CSV_PROBLEMS[(err as unknown as { code: string }).code] ?? 'the file is not well-formed CSV';
  return new CsvError(`Malformed CSV at ${where}: ${problem}`, row, line);
}

const CSV_PROBLEMS: Record<string, string> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted cell is never closed',
  CSV_INVALID_CLOSING_QUOTE: 'a closing quote is followed by something other than a comma or the end of the row',
  CSV_NON_TRIMABLE_CHAR_AFTER_CLOSING_QUOTE: 'a closing quote is followed by text before the next comma',
  CSV_INVALID_OPENING_QUOTE: 'a quote appears inside a cell that does not start with one',
  CSV_MAX_RECORD_SIZE: 'a row is too long',
};

// ---------------------------------------------------------------------------------------------------------
// Headers
// ---------------------------------------------------------------------------------------------------------

// Letters, combining marks and digits in any script survive, so a non-English header stays readable and a
// decomposed accent (NFD) does not split a word; everything else is a separator.
const HEADER_SEPARATORS = /[^\p{L}\p{M}\p{N}]+/gu;

/**
 * Canonical column key: `"Authorizer ID"` → `authorizer_id`, `"Payment-Amount ($)"` → `payment_amount`.
 * No camelCase splitting (`AuthorizerId` → `authorizerid`). Idempotent. Check metaKey before this: metadata
 * keys are case-sensitive and normalizing would merge or rename them.
 */
export function normalizeHeader(h: string): string {
  const s = h.toLowerCase().replace(HEADER_SEPARATORS, '_');
  let start = 0;
  let end = s.length;
  while (start < end && s.charCodeAt(start) === 95) start++;
  while (end > start && s.charCodeAt(end - 1) === 95) end--;
  return s.slice(start, end);
}

/**
 * The metadata key of a `meta_<key>` column, or null for any other column. The prefix is matched
 * case-insensitively; the key is kept exactly as written apart from surrounding whitespace, because the
 * export writes `meta_` + the authorizer's own key and a re-upload must give back the same key.
 * A bare `meta_` has no key and is not a metadata column.
 */
export function metaKey(header: string): string | null {
  const h = header.trim();
  if (h.length <= 5 || h.slice(0, 5).toLowerCase() !== 'meta_') return null;
  const key = h.slice(5).trim();
  return key === '' ? null : key;
}

// ---------------------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------------------

const NEEDS_QUOTES = /[",\r\n]/;
const QUOTE = /"/g;

/**
 * One RFC 4180 cell.
 *
 * Text that a spreadsheet would evaluate as a formula (first character `=`, `+`, `-`, `@`, tab or CR, the
 * OWASP CSV-injection list) gets a leading `'`. Every such text cell is guarded, including text that looks
 * numeric like "-12.50" or a phone "+1555…": values that are numbers must be passed as JS numbers, which are
 * written as they are and never guarded. The guard is not undone by readCsv.
 *
 * Cells are also quoted when they start or end with whitespace, because readCsv trims unquoted cells.
 */
export function csvCell(v: CsvValue): string {
  if (v === null || v === undefined) return '';
  if (typeof v !== 'string') return String(v);
  if (v.length === 0) return '';
  let s = v;
  const first = s.charCodeAt(0);
  // = + - @ TAB CR
  if (first === 61 || first === 43 || first === 45 || first === 64 || first === 9 || first === 13) s = "'" + s;
  if (NEEDS_QUOTES.test(s) || isSpace(s.charCodeAt(0)) || isSpace(s.charCodeAt(s.length - 1))) {
    return '"' + s.replace(QUOTE, '""') + '"';
  }
  return s;
}

/** One CSV record with its CRLF line end (RFC 4180). */
export function csvLine(cells: readonly CsvValue[]): string {
  let out = '';
  for (let i = 0; i < cells.length; i++) {
    if (i > 0) out += ',';
    out += csvCell(cells[i]);
  }
  return out + '\r\n';
}

// The characters String.prototype.trim removes (csv-parse's right trim uses it; its left trim uses a subset),
// tested by code so the common case costs two comparisons.
function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 160) return false;
  return (
    c === 160 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/** A CSV file as the answer, to be saved under `filename` (caches keep it apart from the JSON at the same address). */
export const csvDownload = (body: string, filename: string): Response =>
  new Response(body, { headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename=${filename}`, vary: 'Accept' } });

/**
 * Whether the answer is the CSV: `format` when given, else the Accept header, when it ranks text/csv above
 * application/json (a type absent is 0; wildcards and parameters other than q are not read, so a wildcard alone is JSON).
 */
export function wantsCsv(format: 'json' | 'csv' | undefined, accept: string | null): boolean {
  if (format) return format === 'csv';
  let csv = 0;
  let json = 0;
  for (const range of (accept ?? '').split(',')) {
    const [type, ...params] = range.split(';').map((x) => x.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q ? Number(q.slice(2)) : 1;
    if (!Number.isFinite(weight)) continue;
    if (type === 'text/csv') csv = Math.max(csv, weight);
    else if (type === 'application/json') json = Math.max(json, weight);
  }
  return csv > 0 && csv > json;
}
