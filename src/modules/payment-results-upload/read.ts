import type { UploadInput, UploadReport } from './types';
import { parse } from 'csv-parse';
import { isUtf8 } from 'node:buffer';
import { once } from 'node:events';
import { InvalidInput } from '../../platform/errors';
import { CsvError, toCsvError } from '../../platform/csv';
import { checkChange, checkRow, cell, keyOf, readHeader, sameRow, type Column, type ParsedChange, type ParsedRow, type RawRow, type RowProblem } from './rules';

// Reading an upload's file: its bytes (a body or a multipart part), every row parsed and checked by the rules
// (rules.ts) within the upload's budget of rows and time, and rule 6 applied across the file. Nothing here
// writes: the accepted rows go to matching (match.ts, slice.ts) and recording (recording.ts).

export const UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;

/** UTF-8 (a byte-order mark allowed) and at most 10 MB, or a 400 before any row is read. */
export function checkFile(bytes: Uint8Array): void {
  if (bytes.byteLength > UPLOAD_LIMIT_BYTES) throw InvalidInput.field('file', `The file is larger than 10 MB (${UPLOAD_LIMIT_BYTES} bytes)`);
  if (!isUtf8(bytes)) throw InvalidInput.field('file', 'The file is not UTF-8 text; save it as CSV UTF-8 and upload it again');
}

export const CHUNK_BYTES = 16 * 1024;
/**
 * A 10 MB file makes garbage faster than the collector's own pace reclaims it: an asynchronous collection is
 * asked for every few thousand rows, which keeps the peak memory of an upload near what it holds (bun run
 * bench upload: about 130 MB of growth rather than 180, at no measurable cost in time).
 */
export const GC_HINT_ROWS = 4096;
/** Accepted rows decided together: a slice's look-ups are made for it at once (and recorded in one savepoint). */
export const SLICE = 512;
export const YIELD_ROWS = 2048;
/** Far above any results file or annotated export (nine columns, at most 200 meta_, the payment columns). */
export const MAX_COLUMNS = 1000;
/** The report lists this many problems at most; a file can hold hundreds of thousands of them. */
export const PROBLEMS_LISTED = 10_000;

/**
 * What one upload may take, checked as it goes: rows read (UPLOAD_MAX_ROWS, counted before each row is
 * decided), time (UPLOAD_TIME_LIMIT_MS, a deadline on performance.now()) and whether its caller is still there.
 */
export interface UploadBudget {
  maxRows: number;
  timeLimitMs: number;
  deadline: number;
  cancelled: () => boolean;
}

export function budgetOf(config: { uploadMaxRows: number; uploadTimeLimitMs: number }, cancelled: () => boolean): UploadBudget {
  return { maxRows: config.uploadMaxRows, timeLimitMs: config.uploadTimeLimitMs, deadline: performance.now() + config.uploadTimeLimitMs, cancelled };
}

/** An upload stopped before its end: too many rows or too long (a row-0 error), or its caller gone (no answer). */
export class UploadStopped extends Error {
  constructor(readonly why: 'rows' | 'time' | 'cancelled') {
    super(`upload stopped: ${why}`);
  }
}

/** Throws when the upload is past its time or its caller has gone; cheap enough for every slice of rows. */
export function checkBudget(b: UploadBudget): void {
  if (b.cancelled()) throw new UploadStopped('cancelled');
  if (performance.now() > b.deadline) throw new UploadStopped('time');
}

/** The one problem of a file stopped by its budget: nothing of it is recorded. */
export function budgetProblem(b: UploadBudget, why: 'rows' | 'time'): RowProblem {
  const reason =
    why === 'rows'
      ? `The file has more than ${b.maxRows.toLocaleString('en-US')} rows, the most one upload takes; nothing was recorded. Split it into files of fewer rows`
      : `The file took longer than ${(b.timeLimitMs / 1000).toLocaleString('en-US')} s to read and check, the most one upload may take before it is recorded; nothing was recorded. Split it into smaller files`;
  return { row: 0, rule: 0, reason, severity: 'error' };
}

/**
 * The problems of an upload in report order (row, then rule), keeping only the first PROBLEMS_LISTED: when
 * twice that many are held, they are sorted and the rest counted and dropped. The sort is stable, so the
 * problems of one row and rule keep the order they were found in.
 */
export class Problems {
  private list: RowProblem[] = [];
  private left = 0;
  /** A row-0 error: the file as a whole is refused and nothing is recorded. */
  fileError = false;

  /** `from`: the problems of rows before it are not kept (a resumed upload lists those of the rows it records). */
  constructor(private readonly from = 0) {}

  add(p: RowProblem): void {
    if (p.row === 0 && p.severity === 'error') this.fileError = true;
    if (p.row !== 0 && p.row < this.from) return;
    // Once the list is full, a problem after its last one in report order would be dropped: it is counted.
    const last = this.left > 0 ? this.list[PROBLEMS_LISTED - 1]! : null;
    if (last && (p.row > last.row || (p.row === last.row && p.rule >= last.rule))) {
      this.left++;
      return;
    }
    this.list.push(p);
    if (this.list.length >= 2 * PROBLEMS_LISTED) this.keepFirst();
  }

  /** A copy, to add to without changing this one (a transaction that may be undone and run again). */
  copy(): Problems {
    const c = new Problems(this.from);
    c.list = this.list.slice();
    c.left = this.left;
    c.fileError = this.fileError;
    return c;
  }

  private keepFirst(): void {
    this.list.sort((a, b) => a.row - b.row || a.rule - b.rule);
    if (this.list.length > PROBLEMS_LISTED) {
      this.left += this.list.length - PROBLEMS_LISTED;
      this.list.length = PROBLEMS_LISTED;
    }
  }

  report(): UploadReport['problems'] {
    this.keepFirst();
    const out = this.list.map(({ row, reason, severity }) => ({ row, reason, severity }));
    if (this.left > 0) {
      out.unshift({ row: 0, reason: `${this.left} more problems are not listed: only the first ${PROBLEMS_LISTED}, in row order, are; the counts are exact`, severity: 'warning' });
    }
    return out;
  }
}

/**
 * A CSV parser fed the bytes in slices with its back-pressure, so that only a slice's records are held at a
 * time rather than the whole file's. The caller iterates it and destroys it when done.
 */
export function parserOf(bytes: Uint8Array) {
  // Endings listed rather than guessed: a guess locks onto the header's ending and reads a later bare CR as
  // text inside a cell, which joins two rows into one. CRLF first so it is not read as CR then a blank line.
  const parser = parse({
    bom: true,
    record_delimiter: ['\r\n', '\n', '\r'],
    // A row is cut into at most MAX_COLUMNS + 1 cells, the last holding the rest of the line as text: a line
    // of millions of commas is one long cell rather than an array of millions of empty ones.
    ignore_last_delimiters: MAX_COLUMNS + 1,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: false,
  });
  const feed = (async () => {
    for (let i = 0; i < bytes.byteLength; i += CHUNK_BYTES) {
      const slice = Buffer.from(bytes.buffer, bytes.byteOffset + i, Math.min(CHUNK_BYTES, bytes.byteLength - i));
      if (!parser.write(slice)) await once(parser, 'drain');
      // A slice that completes no record (one long row) never fills the buffer: without this the whole file
      // could be parsed in one turn of the event loop, with every other request waiting.
      else await new Promise((resolve) => setImmediate(resolve));
    }
    parser.end();
  })();
  feed.catch(() => undefined); // a parse error reaches the reader through the iteration
  return parser;
}

/** A spreadsheet's label of a totals row: "Total", "Totals:", "Grand total", "Subtotal", "Sum". */
export const SUMMARY_LABEL = /^(grand\s*|sub\s*)?totals?:?$|^sum:?$/i;

/**
 * A summary row names no payment: it has no status (without one no row is accepted anyway), and its identifier
 * cells are empty or hold a totals label.
 */
export function isSummaryRow(values: RawRow['values']): boolean {
  if (values.payment_status) return false;
  const ids = [values.authorizer_unique_id, values.reference].filter((v): v is string => !!v);
  return ids.every((v) => SUMMARY_LABEL.test(v));
}

/** Reads the file: rows with their numbers (header = row 1) and every problem of each. */
export async function readRows(bytes: Uint8Array, now: number, budget: UploadBudget, problemsFrom = 0) {
  const problems = new Problems(problemsFrom);
  const parsed: ParsedRow[] = [];
  const changes: ParsedChange[] = [];
  let dataRowCount = 0;
  let format: UploadReport['format'] = 'generic';
  let columns: (Column | null)[] | null = null;
  let row = 0;
  const parser = parserOf(bytes);
  let readable = true;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      row++;
      // Counted before the row is decided: a file of millions of short rows is refused at the first one past it.
      if (row > budget.maxRows) throw new UploadStopped('rows');
      if (row % GC_HINT_ROWS === 0) Bun.gc(false);
      // Records already parsed arrive without a turn of the event loop: other requests get one now and then.
      if (row % YIELD_ROWS === 0) {
        checkBudget(budget);
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (!columns) {
        if (record.length > MAX_COLUMNS) {
          problems.add({ row: 0, rule: 0, reason: `The header has more than ${MAX_COLUMNS} columns; nothing was recorded`, severity: 'error' });
          return { format, parsed: [], changes: [], problems, dataRowCount: 0, headerOk: false };
        }
        const h = readHeader(record);
        format = h.format;
        columns = h.columns;
        const has = (c: Column) => columns!.includes(c);
        const missing = (format === 'notifications_of_change'
          ? [!has('corrected_data') && 'a corrected data column (corrected_data)', !has('authorizer_unique_id') && !has('reference') && 'an authorizer_unique_id or reference column']
          : [
          !has('payment_amount') && 'an amount column (payment_amount or amount)',
          !has('payment_status') && 'a status column (payment_status, outcome or status)',
          !has('submitted_at') && 'a date column (submitted_at, payment_date or submitted)',
          !has('return_code') && 'a return code column (return_code or return_reason)',
          !has('authorizer_unique_id') && !has('reference') && 'an authorizer_unique_id or reference column',
            ]
        ).filter(Boolean);
        if (missing.length > 0) {
          // Nothing would be recorded: the rest of the file is not read.
          problems.add({ row: 0, rule: 0, reason: `The header lacks ${missing.join(', ')}; nothing was recorded`, severity: 'error' });
          return { format, parsed: [], changes: [], problems, dataRowCount: 0, headerOk: false };
        }
        continue;
      }
      const values: RawRow['values'] = {};
      let blank = true;
      for (let i = 0; i < record.length; i++) {
        const v = cell(record[i]);
        if (v !== '') blank = false;
        const c = columns[i];
        if (c) values[c] = v;
      }
      if (blank) continue; // a blank row
      if (isSummaryRow(values)) continue; // a summary row: no status, and no identifier but a "Total" label
      dataRowCount++;
      // A row of results may carry a Notification of Change too (change_code, corrected_data); a report of
      // changes is nothing else.
      if (format !== 'notifications_of_change') {
        const r = checkRow({ row, values }, now);
        for (const p of r.problems) problems.add(p);
        if (r.parsed) parsed.push(r.parsed);
      }
      if (format === 'notifications_of_change' || values.change_code) {
        const c = checkChange({ row, values }, format === 'notifications_of_change' ? 'error' : 'warning');
        for (const p of c.problems) problems.add(p);
        if (c.change) changes.push(c.change);
      }
    }
  } catch (e) {
    // In the parser's words the message could quote a cell: the problem is named in ours.
    const ce = toCsvError(e);
    if (!(ce instanceof CsvError)) throw ce;
    problems.add({ row: ce.row, rule: 0, reason: `${ce.message}; nothing was recorded`, severity: 'error' });
    readable = false;
  } finally {
    parser.destroy();
  }
  if (!columns && readable) problems.add({ row: 0, rule: 0, reason: 'The file is empty: no header row', severity: 'error' });
  return { format, parsed, changes, problems, dataRowCount, headerOk: columns !== null && readable };
}

/**
 * The file of an upload: its bytes, or the part `file` of a multipart body. A 10 MB body is parsed where the
 * upload runs (the worker), never on the event loop.
 */
export async function fileOf(input: UploadInput): Promise<Uint8Array> {
  if (!input.multipart) return input.bytes;
  let form: Awaited<ReturnType<Response['formData']>>;
  try {
    form = await new Response(input.bytes, { headers: { 'content-type': input.multipart } }).formData();
  } catch {
    throw new InvalidInput('Request body is not valid multipart/form-data');
  }
  const file = form.get('file');
  if (!(file instanceof Blob)) throw InvalidInput.field('file', 'Send the CSV file in a multipart part named file');
  return new Uint8Array(await file.arrayBuffer());
}

/** A file read and checked: its rows accepted after rule 6, in file order, and the problems found. */
export interface ReadFile {
  format: UploadReport['format'];
  dataRowCount: number;
  accepted: ParsedRow[];
  /** The Notifications of Change read, in file order (recorded with the upload's last transaction). */
  changes: ParsedChange[];
  problems: Problems;
  /** False when the file as a whole is refused (its header, or a row it cannot be read past). */
  headerOk: boolean;
}

/** Reads the file and applies rule 6; the problems of rows before `problemsFrom` are not kept. */
export async function readAccepted(bytes: Uint8Array, now: number, budget: UploadBudget, problemsFrom = 0): Promise<ReadFile> {
  const read = await readRows(bytes, now, budget, problemsFrom);
  const problems = read.problems;

  // Rule 6: rows of one reference that disagree are all rejected; identical ones count once (the first is
  // kept). One pass gathers each key's first row, its count and whether every row agrees with the first; a
  // second decides each row. A problem names the first row of its key and the count, never the whole group.
  const groups = new Map<string, { first: ParsedRow; count: number; agree: boolean }>();
  for (const p of read.parsed) {
    const key = keyOf(p);
    const g = groups.get(key);
    if (!g) groups.set(key, { first: p, count: 1, agree: true });
    else {
      g.count++;
      if (g.agree && !sameRow(g.first, p)) g.agree = false;
    }
  }
  const accepted: ParsedRow[] = [];
  for (const p of read.parsed) {
    const key = keyOf(p);
    const g = groups.get(key)!;
    if (g.count === 1) accepted.push(p);
    else if (g.agree) {
      if (g.first === p) accepted.push(p);
      else problems.add({ row: p.row, rule: 6, reason: `identical to row ${g.first.row} for reference ${key}; counted once`, severity: 'warning' });
    } else {
      problems.add({ row: p.row, rule: 6, reason: `${g.count} rows for reference ${key}, from row ${g.first.row}, disagree; all of them are rejected`, severity: 'error' });
    }
  }
  groups.clear();
  return { format: read.format, dataRowCount: read.dataRowCount, accepted, changes: read.changes, problems, headerOk: read.headerOk };
}

/** How many accepted rows an upload recorded (or a dry run would), how many of them matched, how many added nothing. */
export interface Tally {
  rowCount: number;
  matched: number;
  alreadyRecorded: number;
  /** Notifications of Change recorded (or a dry run's that would be). */
  changes?: number;
}

export const NO_ROWS: Tally = { rowCount: 0, matched: 0, alreadyRecorded: 0 };

/** The report of a file's `rows` (those recorded, or a dry run's) and their tally. */
export const reportOf = (read: ReadFile, rows: UploadReport['rows'], tally: Tally, dryRun: boolean): UploadReport => ({
  format: read.format,
  rowCount: tally.rowCount,
  dataRowCount: read.dataRowCount,
  matched: tally.matched,
  needsAttention: tally.rowCount - tally.matched,
  alreadyRecorded: tally.alreadyRecorded,
  notificationsOfChange: tally.changes ?? 0,
  dryRun,
  rows,
  problems: read.problems.report(),
});
