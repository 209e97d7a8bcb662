import { newId } from '../../platform/ids';
import { writeGate } from '../../platform/context';
import { uploadWorkerOf } from './offload';
import type { UploadAnswer, UploadForm, UploadInput, UploadReport, UploadSummary } from './types';
import { parse } from 'csv-parse';
import { isUtf8 } from 'node:buffer';
import { once } from 'node:events';
import type { Ctx } from '../../deps';
import { readSnapshot, savepoint, transaction, type Tx } from '../../platform/context';
import { InvalidInput, Unavailable } from '../../platform/errors';
import { readReturnRates, saveReturnRates } from '../return-rates/watch';
import { uploadStore as store } from './store';
import { decideSlice, LedgerGuard, Lookups, type SliceDecided } from './slice';
import { HeldLease } from '../../platform/leases';
import type { SealedColumn } from '../../platform/vault';
import { CsvError, toCsvError } from '../../platform/csv';
import { checkRow, cell, keyOf, readHeader, sameRow, type Column, type ParsedRow, type RawRow, type RowProblem } from './rules';

// POST /v1/payment_results/uploads: outcomes of debits the service cannot read from a processor, as CSV.
// The file is read row by row (the report is what is kept), every rule applied to every row, rows matched to
// borrowers, and the accepted rows recorded against what is known of their reference, a slice at a time, in
// transactions that let other writes go between two slices: once the first is committed, the upload is
// recorded to its end exactly once, resumed after a crash or a stop if need be (recordInSlices). A dry run
// decides every slice on one snapshot and writes nothing.

export const UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;

/** UTF-8 (a byte-order mark allowed) and at most 10 MB, or a 400 before any row is read. */
function checkFile(bytes: Uint8Array): void {
  if (bytes.byteLength > UPLOAD_LIMIT_BYTES) throw InvalidInput.field('file', `The file is larger than 10 MB (${UPLOAD_LIMIT_BYTES} bytes)`);
  if (!isUtf8(bytes)) throw InvalidInput.field('file', 'The file is not UTF-8 text; save it as CSV UTF-8 and upload it again');
}

const CHUNK_BYTES = 16 * 1024;
/**
 * A 10 MB file makes garbage faster than the collector's own pace reclaims it: an asynchronous collection is
 * asked for every few thousand rows, which keeps the peak memory of an upload near what it holds (bun run
 * bench upload: about 130 MB of growth rather than 180, at no measurable cost in time).
 */
const GC_HINT_ROWS = 4096;
/** Accepted rows decided together: a slice's look-ups are made for it at once (and recorded in one savepoint). */
const SLICE = 512;
/**
 * The rows of a recorded slice. On SQLite a write that comes while an upload holds the write lock waits for
 * the rest of the slice under way: 128 rows, 15 to 60 ms on a 2-core machine, rather than 512 (up to 900 ms
 * seen on one loaded with other work), at no cost measurable in the upload's own time. On PostgreSQL nothing
 * waits for the upload's transactions, each of one slice, and a slice of 512 makes fewer of them.
 */
export const sliceRowsOf = (deps: Pick<Ctx['deps'], 'pg'>): number => (deps.pg ? SLICE : 128);
const YIELD_ROWS = 2048;
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
function checkBudget(b: UploadBudget): void {
  if (b.cancelled()) throw new UploadStopped('cancelled');
  if (performance.now() > b.deadline) throw new UploadStopped('time');
}

/** The one problem of a file stopped by its budget: nothing of it is recorded. */
function budgetProblem(b: UploadBudget, why: 'rows' | 'time'): RowProblem {
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
class Problems {
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
const SUMMARY_LABEL = /^(grand\s*|sub\s*)?totals?:?$|^sum:?$/i;

/**
 * A summary row names no payment: it has no status (without one no row is accepted anyway), and its identifier
 * cells are empty or hold a totals label.
 */
function isSummaryRow(values: RawRow['values']): boolean {
  if (values.payment_status) return false;
  const ids = [values.authorizer_unique_id, values.reference].filter((v): v is string => !!v);
  return ids.every((v) => SUMMARY_LABEL.test(v));
}

/** Reads the file: rows with their numbers (header = row 1) and every problem of each. */
async function readRows(bytes: Uint8Array, now: number, budget: UploadBudget, problemsFrom = 0) {
  const problems = new Problems(problemsFrom);
  const parsed: ParsedRow[] = [];
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
          return { format, parsed: [], problems, dataRowCount: 0, headerOk: false };
        }
        const h = readHeader(record);
        format = h.format;
        columns = h.columns;
        const has = (c: Column) => columns!.includes(c);
        const missing = [
          !has('payment_amount') && 'an amount column (payment_amount or amount)',
          !has('payment_status') && 'a status column (payment_status, outcome or status)',
          !has('submitted_at') && 'a date column (submitted_at, payment_date or submitted)',
          !has('return_code') && 'a return code column (return_code or return_reason)',
          !has('authorizer_unique_id') && !has('reference') && 'an authorizer_unique_id or reference column',
        ].filter(Boolean);
        if (missing.length > 0) {
          // Nothing would be recorded: the rest of the file is not read.
          problems.add({ row: 0, rule: 0, reason: `The header lacks ${missing.join(', ')}; nothing was recorded`, severity: 'error' });
          return { format, parsed: [], problems, dataRowCount: 0, headerOk: false };
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
      const r = checkRow({ row, values }, now);
      for (const p of r.problems) problems.add(p);
      if (r.parsed) parsed.push(r.parsed);
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
  return { format, parsed, problems, dataRowCount, headerOk: columns !== null && readable };
}

export const SUMMARY_PROBLEMS = 200;

/** The report in the form asked for: made in the worker, so a report of many megabytes never passes through the event loop as objects. */
export function answerOf(report: UploadReport, form: UploadForm): UploadAnswer {
  if (form === 'json') return { form, json: reportJson(report) };
  const { rows: _rows, problems, ...counts } = report;
  return { form, summary: { ...counts, problems: problems.slice(0, SUMMARY_PROBLEMS), problemCount: problems.length } };
}

/** Refuses (429), before its body is read, an upload of a lender whose share of uploads is already waiting. */
export function refuseWhenUploadsFull(ctx: Ctx): void {
  uploadWorkerOf(ctx.deps)?.refuseWhenFull(ctx.lender.id);
}

/**
 * POST /v1/payment_results/uploads and the portal's check and record: read, decided and recorded in the
 * upload worker (its own thread and SQLite connection), so the event loop keeps serving; in this thread when
 * the database is in memory (no other connection can open it).
 */
export async function uploadResults({ ctx, input, form, signal }: { ctx: Ctx; input: UploadInput; form: UploadForm; signal?: AbortSignal }): Promise<UploadAnswer> {
  if (!input.multipart) checkFile(input.bytes);
  const worker = uploadWorkerOf(ctx.deps);
  if (worker) return worker.run(ctx, input, form, signal);
  const report = await processUpload({
    ctx,
    input,
    budget: budgetOf(ctx.deps.config, () => signal?.aborted === true),
    writeTurn: async (fn) => {
      await writeGate(ctx.deps).turn();
      return fn();
    },
  });
  return answerOf(report, form);
}

/**
 * The file of an upload: its bytes, or the part `file` of a multipart body. A 10 MB body is parsed where the
 * upload runs (the worker), never on the event loop.
 */
async function fileOf(input: UploadInput): Promise<Uint8Array> {
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

const JSON_ROWS_A_PART = 4096;

/**
 * The report's JSON (the Report schema, in its order) as UTF-8 parts of a few hundred kilobytes, so that a
 * report of tens of megabytes is never one string and a copy of it at once: the rows are written a slice at
 * a time, and the parts go to the answer as they are.
 */
function reportJson(report: UploadReport): Uint8Array[] {
  const enc = new TextEncoder();
  const { rows, problems, ...counts } = report;
  const parts = [enc.encode(`${JSON.stringify(counts).slice(0, -1)},"rows":[`)];
  for (let i = 0; i < rows.length; i += JSON_ROWS_A_PART) {
    const slice = JSON.stringify(rows.slice(i, i + JSON_ROWS_A_PART)).slice(1, -1);
    parts.push(enc.encode(i === 0 ? slice : `,${slice}`));
  }
  parts.push(enc.encode(`],"problems":${JSON.stringify(problems)}}`));
  return parts;
}

/** The API's answer: the report's JSON as it was made, in parts. */
export async function uploadResultsJson(args: { ctx: Ctx; input: UploadInput; signal?: AbortSignal }): Promise<Uint8Array[]> {
  const a = await uploadResults({ ...args, form: 'json' });
  if (a.form !== 'json') throw new Error('unreachable');
  return a.json;
}

/** The portal's: the counts and the first problems. */
export async function uploadSummary(args: { ctx: Ctx; input: UploadInput }): Promise<UploadSummary> {
  const a = await uploadResults({ ...args, form: 'summary' });
  if (a.form !== 'summary') throw new Error('unreachable');
  return a.summary;
}

/** How an upload's transaction gets the write lock: after the write gate's turn, or as the worker's exclusive hold. */
export type WriteTurn = <T>(fn: () => T | Promise<T>) => Promise<T>;

/**
 * Where nothing tells whether other writes wait for the lock (an upload in this thread, a database in memory,
 * whose transactions take turns without the gate), they are taken to: a transaction records one slice. So it
 * does on PostgreSQL, where there is no lock to share and a transaction holds its rows' locks no longer.
 */
const ALWAYS = () => true;

/** What an upload is run with: the file, its turn at the write lock, whether others wait for it, its budget. */
type UploadArgs = {
  ctx: Ctx;
  input: UploadInput;
  writeTurn: WriteTurn;
  othersWait?: () => boolean;
  budget: UploadBudget;
  onRecording?: () => void;
};

/**
 * The upload itself, wherever it runs: the file read, every rule, and the recording in slices (or a read-only
 * snapshot for a dry run). A file past its budget of rows or time is answered with one row-0 error and
 * nothing recorded; an upload whose caller has gone throws. Both are checked only until its first transaction:
 * once that is committed, the upload is recorded to its end, and `onRecording` is called. `othersWait` says
 * whether other writes wait for the lock (recordInSlices).
 */
export async function processUpload(args: UploadArgs): Promise<UploadReport> {
  try {
    return await decideAndRecord(args);
  } catch (e) {
    if (!(e instanceof UploadStopped) || e.why === 'cancelled') throw e;
    const problems = new Problems();
    problems.add(budgetProblem(args.budget, e.why));
    return { format: 'generic', rowCount: 0, dataRowCount: 0, matched: 0, needsAttention: 0, dryRun: args.input.dryRun, rows: [], problems: problems.report() };
  }
}

/** A file read and checked: its rows accepted after rule 6, in file order, and the problems found. */
interface ReadFile {
  format: UploadReport['format'];
  dataRowCount: number;
  accepted: ParsedRow[];
  problems: Problems;
  /** False when the file as a whole is refused (its header, or a row it cannot be read past). */
  headerOk: boolean;
}

/** Reads the file and applies rule 6; the problems of rows before `problemsFrom` are not kept. */
async function readAccepted(bytes: Uint8Array, now: number, budget: UploadBudget, problemsFrom = 0): Promise<ReadFile> {
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
  return { format: read.format, dataRowCount: read.dataRowCount, accepted, problems, headerOk: read.headerOk };
}

/** The report of a file's `rows` (those recorded, or a dry run's), `rowCount` of them, `matched` of which matched. */
const reportOf = (read: ReadFile, rows: UploadReport['rows'], rowCount: number, matched: number, dryRun: boolean): UploadReport => ({
  format: read.format,
  rowCount,
  dataRowCount: read.dataRowCount,
  matched,
  needsAttention: rowCount - matched,
  dryRun,
  rows,
  problems: read.problems.report(),
});

async function decideAndRecord({
  ctx,
  input,
  writeTurn,
  othersWait = ALWAYS,
  budget,
  onRecording,
}: UploadArgs): Promise<UploadReport> {
  const bytes = await fileOf(input);
  checkFile(bytes);
  const now = ctx.deps.clock.now();
  const read = await readAccepted(bytes, now, budget);
  if (!read.headerOk || read.problems.fileError) return reportOf(read, [], 0, 0, input.dryRun);
  if (!input.dryRun) {
    const upload = { id: newId(), creator: input.creator ?? null, now, read, done: 0, matched: 0 };
    return recordInSlices(ctx, upload, { file: bytes, budget, onRecording }, writeTurn, othersWait);
  }
  // A dry run writes nothing: it decides every slice on one snapshot, in a deferred transaction that never
  // takes the write lock, and is rolled back all the same.
  return readSnapshot(ctx, async (tx) => {
    const rows: UploadReport['rows'] = [];
    let matched = 0;
    const lookups = new Lookups(tx);
    for (let n = 0; n < read.accepted.length; n += SLICE) {
      // Past its time, or its caller gone.
      checkBudget(budget);
      const decided = await decideSlice(tx, read.accepted.slice(n, n + SLICE), lookups, now, true);
      for (const r of decided.rows) rows.push(r);
      for (const p of decided.problems) read.problems.add(p);
      matched += decided.matched;
      if ((n + SLICE) % GC_HINT_ROWS === 0) Bun.gc(false);
    }
    return reportOf(read, rows, read.accepted.length, matched, true);
  });
}

/** How long a replica's hold on an upload it records lasts without renewal (PostgreSQL; renewed between slices). */
export const UPLOAD_LEASE_MS = 60_000;

/** The lease of an upload being recorded: one replica at a time records it (platform/leases.ts). */
const leaseOf = (deps: Ctx['deps'], id: string) => HeldLease.take(deps, `upload:${id}`, deps.config.replicaId, UPLOAD_LEASE_MS);

/** The uploads this thread records now, so that it never resumes one of them beside itself. */
const recordingHere = new Set<string>();

/** An upload whose slices another run records now (another replica took it over): this run stops. */
class UploadTakenOver extends Error {
  constructor(readonly uploadId: string) {
    super(`upload ${uploadId} is recorded by another run`);
  }
}

/** A slice that would take a borrower's ledger past what a total can give exactly: it is undone, and the upload stops there. */
class PastExactTotal extends Error {
  constructor(
    readonly borrower: string | null,
    readonly row: number,
  ) {
    super('a ledger total would pass 2^53 - 1 cents');
  }
}

/** The slice of a file with no accepted row: its last transaction records only the history. */
const NOTHING_DECIDED: SliceDecided = { rows: [], problems: [], matched: 0, borrowers: new Map() };

/** An upload as it is recorded: its id (its history record's), who sent it, the time its rows were checked against. */
interface Recording {
  id: string;
  creator: string | null;
  now: number;
  read: ReadFile;
  /** Accepted rows recorded before this run (a resumed upload's), and how many of them matched. */
  done: number;
  matched: number;
}

/**
 * The longest one transaction of an upload goes on taking slices while no other write waits for the lock (a
 * crash undoes at most this much). Each commit has a cost of its own (every page the transaction changed is
 * written again, then synced): a transaction of one slice each made a 10 MB upload take about twice as long.
 */
const LONGEST_TRANSACTION_MS = 1000;

/**
 * Records the accepted rows from `u.done` on in transactions, each taken in its own turn of the write gate and
 * recording slices (sliceRowsOf) one after the other, until another write waits for the lock (`othersWait`,
 * read after each slice) or it has run for LONGEST_TRANSACTION_MS: a write that comes meanwhile waits for one
 * slice and the commit, not for the upload. Each slice is decided on what is stored when it is recorded, under
 * the lender's upload lock, exactly as one slice of one long transaction was: the re-sending rules and
 * forward-only recording hold slice by slice, and a slice recorded already changes nothing when it is recorded
 * again (its source events are known, its rows identical).
 *
 * What the upload is recorded as stays true whatever stops it: the first transaction stores what finishing it
 * takes (its file, sealed, and the time `now`) in unfinished_uploads, each transaction moves the count of rows
 * done on, and the last one writes the history record and deletes the stored file. An upload cut off between
 * two transactions (a crash, a stop) is finished from its count by resumeUnfinished. An upload recorded in one
 * transaction stores nothing. Each transaction first checks that the count is where this run left it: a run
 * that finds another moved it stops.
 *
 * Every ledger total is given exactly: a slice that would take the credited total of a borrower it records for
 * past 2^53 - 1 cents is undone (its savepoint), and the upload stops there, with a row-0 error naming the
 * first row not recorded; what was recorded before it stands, and is finished as the upload, in the same
 * transaction (the first slice of all: nothing is recorded, and the file is refused as any file is).
 *
 * `first`: a new upload's file, its budget (checked for the last time as its first transaction starts) and
 * what to call once its first transaction is committed; absent for a resumed upload.
 */
async function recordInSlices(
  ctx: Ctx,
  u: Recording,
  first: { file: Uint8Array; budget: UploadBudget; onRecording?: () => void } | null,
  writeTurn: WriteTurn,
  othersWait: () => boolean,
  held: HeldLease | null = null,
): Promise<UploadReport> {
  const { accepted } = u.read;
  const lenderId = ctx.lender.id;
  const rows: UploadReport['rows'] = [];
  let done = u.done;
  let matched = u.matched;
  // Whether unfinished_uploads holds the upload (a resumed one does).
  let stored = first === null;
  const size = sliceRowsOf(ctx.deps);
  const several = done + size < accepted.length;
  // Sealed before the first turn, so that the lock is not held meanwhile (a new upload of more than one slice).
  const sealed = first && several ? sealFile(ctx.deps, first.file) : null;
  // On PostgreSQL another replica never resumes it while this one records it.
  const lease = held ?? (several ? await leaseOf(ctx.deps, u.id) : null);
  const guard = new LedgerGuard();
  recordingHere.add(u.id);
  try {
    for (;;) {
      const from = done;
      const t = await writeTurn(async () => {
        // The wait for the write lock may have outlasted the caller or the budget: checked before the first
        // transaction, never after.
        if (first && !stored) checkBudget(first.budget);
        const committed = await transaction(ctx, async (tx) => {
          await store.serializeUploads(tx, lenderId);
          if (stored && (await store.unfinishedDone(tx, u.id)) !== from) throw new UploadTakenOver(u.id);
          const lookups = new Lookups(tx);
          const started = performance.now();
          const got: SliceDecided[] = [];
          let end = from;
          let stop: PastExactTotal | null = null;
          do {
            const slice = accepted.slice(end, end + size);
            try {
              got.push(
                await savepoint(tx, async () => {
                  const decided = slice.length > 0 ? await decideSlice(tx, slice, lookups, u.now, false) : NOTHING_DECIDED;
                  const over = await guard.pastExact(tx, decided.borrowers);
                  if (over) throw new PastExactTotal(over.borrower, slice[0]!.row);
                  return decided;
                }),
              );
            } catch (e) {
              if (!(e instanceof PastExactTotal)) throw e;
              stop = e;
              break;
            }
            end += slice.length;
            if (end % GC_HINT_ROWS === 0) Bun.gc(false);
          } while (end < accepted.length && !othersWait() && performance.now() - started < LONGEST_TRANSACTION_MS);
          let m = matched;
          for (const decided of got) {
            for (const r of decided.rows) rows.push(r);
            for (const p of decided.problems) u.read.problems.add(p);
            m += decided.matched;
          }
          if (stop) {
            const recorded = end === 0 ? 'nothing was recorded' : `the rows from row ${stop.row} on were not recorded, those before it were`;
            const whose = stop.borrower === null ? 'a borrower' : `borrower ${stop.borrower}`;
            u.read.problems.add({ row: 0, rule: 0, reason: `The ledger of ${whose} would pass $90,071,992,547,409.91, the most a total can be given exactly; ${recorded}`, severity: 'error' });
          }
          const last = stop !== null || end === accepted.length;
          // A file refused at its first slice: nothing of it is recorded, nor in the history.
          if (last && end === 0 && stop) return { end, m, last, refused: true };
          if (last) await finish(tx, u, reportOf(u.read, rows, end, m, false), stored);
          else if (!stored) await store.beginUnfinished(tx, { id: u.id, lenderId, creator: u.creator, fileSealed: sealed!, checkedAt: u.now, done: end, matched: m });
          else await store.advanceUnfinished(tx, u.id, end, m);
          return { end, m, last, refused: false };
        });
        // Said before the lock is let go, so that nothing can stop the service between the commit and the
        // moment it is known that the upload is partly recorded.
        if (!stored && !committed.last) first?.onRecording?.();
        return committed;
      });
      done = t.end;
      matched = t.m;
      if (t.last) {
        // Refused at its very first slice, nothing of it is recorded: the rates are as they were.
        if (!t.refused) await evaluateRates(ctx, writeTurn);
        return reportOf(u.read, rows, done, matched, false);
      }
      stored = true;
      // A replica stalled past its lease has lost the upload to another, which finishes it: this run stops.
      if (lease && !(await lease.keep())) throw new UploadTakenOver(u.id);
    }
  } catch (e) {
    if (!stored || !first) throw e;
    // Cut off after part of it was recorded: it is finished without its caller, who is told so.
    if (!(e instanceof UploadTakenOver)) ctx.deps.logger.error({ upload_id: u.id, err: e }, 'upload stopped after part of it was recorded; it is resumed');
    throw new Unavailable(
      'The upload stopped after part of it was recorded; the service finishes it on its own, and it is in the upload history once finished, so it need not be sent again',
    );
  } finally {
    recordingHere.delete(u.id);
    if (!held) await lease?.release();
  }
}

/** The last transaction's: the history record written, and a stored upload finished. */
async function finish(tx: Ctx & { tx: Tx }, u: Recording, report: UploadReport, stored: boolean): Promise<void> {
  await store.recordUpload(tx, { id: u.id, lenderId: tx.lender.id, recordedAt: u.now, creator: u.creator, report });
  if (stored) await store.endUnfinished(tx, u.id);
}

/**
 * The lender's return rates, which the upload's returns and debits move, evaluated once its rows are all
 * recorded: read on a snapshot, with no write lock held (they read the lender's whole 60-day window, about half
 * a second for a lender of half a million debits, which no other write should wait for), then saved with their
 * alerts in a short transaction of its own (return-rates/watch.ts saveReturnRates). A failure here leaves the
 * upload recorded; as does a crash before it: the rates are then evaluated by the next evaluation (a return
 * read from a processor, the check before an ACH debit of a lender that pauses on breach, the timer).
 */
async function evaluateRates(ctx: Ctx, writeTurn: WriteTurn): Promise<void> {
  try {
    const read = await readSnapshot(ctx, (tx) => readReturnRates(tx, tx.lender.id));
    await writeTurn(() => transaction(ctx, (tx) => saveReturnRates(tx, tx.lender.id, read)));
  } catch (e) {
    ctx.deps.logger.error({ lender_id: ctx.lender.id, err: e }, 'return rates not evaluated after an upload; the next evaluation does it');
  }
}

/** The file of an unfinished upload is sealed: `vault rotate` seals it again under a new key. */
export const sealedColumns: SealedColumn[] = [{ table: 'unfinished_uploads', key: 'id', column: 'file_sealed' }];

/** The stored form of a file: compressed, then sealed by the vault (it is borrowers' payment data). */
const sealFile = (deps: Ctx['deps'], bytes: Uint8Array): string => deps.vault.sealBytes(Bun.zstdCompressSync(bytes, { level: 1 }));
const openFile = (deps: Ctx['deps'], sealed: string): Uint8Array => new Uint8Array(Bun.zstdDecompressSync(deps.vault.openBytes(sealed)));

/** Nothing stops a resumed upload: its file was within its budget when it was read first. */
const NO_BUDGET: UploadBudget = { maxRows: Infinity, timeLimitMs: Infinity, deadline: Infinity, cancelled: () => false };

/** Unfinished uploads looked at by one call of resumeUnfinished; any more are left to the next. */
const RESUMED_AT_ONCE = 100;

/**
 * Finishes the uploads left unfinished (a crash or a stop between two of their slices), each from its count:
 * its file read again against the time stored with it, so that the same rows are accepted and the rows done
 * are skipped, and the rest recorded in slices as before. Its history record says it was resumed; the
 * problems of the part recorded before the interruption are not listed again (that run's answer listed
 * them). An upload another run records now (this thread's, or on PostgreSQL another replica's, which holds
 * its lease) is left to it. Returns how many were finished.
 */
export async function resumeUnfinished(deps: Ctx['deps'], writeTurn: WriteTurn, othersWait: () => boolean = ALWAYS): Promise<number> {
  let finished = 0;
  for (const id of await store.unfinishedIds({ deps }, RESUMED_AT_ONCE)) {
    if (recordingHere.has(id)) continue;
    const lease = await leaseOf(deps, id);
    if (!lease) continue;
    try {
      const found = await store.unfinishedOf({ deps }, id);
      if (!found) continue;
      const { upload: stored, lender } = found;
      const ctx: Ctx = { lender, deps: { ...deps, clock: { now: () => stored.checkedAt } } };
      const bytes = openFile(deps, stored.fileSealed);
      // Read once to find the first row not recorded, then again keeping only the problems from it on.
      const next = (await readAccepted(bytes, stored.checkedAt, NO_BUDGET)).accepted[stored.done]?.row ?? Infinity;
      const read = await readAccepted(bytes, stored.checkedAt, NO_BUDGET, next);
      const before = Number.isFinite(next) ? `row ${next}` : 'the end of the file';
      read.problems.add({
        row: 0,
        rule: 0,
        reason: `This upload was interrupted after ${stored.done.toLocaleString('en-US')} of its ${read.accepted.length.toLocaleString('en-US')} accepted rows were recorded, and the service finished it; the problems of the rows before ${before} were listed in the answer to the upload and are not listed again`,
        severity: 'warning',
      });
      const u: Recording = { id, creator: stored.creator, now: stored.checkedAt, read, done: stored.done, matched: stored.matched };
      const report = await recordInSlices(ctx, u, null, writeTurn, othersWait, lease);
      finished++;
      deps.logger.info({ upload_id: id, lender_id: lender.id, rows: report.rowCount, resumed_at: stored.done }, 'unfinished upload finished');
    } catch (e) {
      if (e instanceof UploadTakenOver) deps.logger.info({ upload_id: id }, 'unfinished upload left to the run that records it');
      else deps.logger.error({ upload_id: id, err: e }, 'unfinished upload could not be finished; it is tried again later');
    } finally {
      await lease.release();
    }
  }
  return finished;
}
