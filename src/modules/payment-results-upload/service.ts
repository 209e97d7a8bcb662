import { parse } from 'csv-parse';
import { isUtf8 } from 'node:buffer';
import { once } from 'node:events';
import type { Ctx } from '../../deps';
import { withTransaction, type Tx } from '../../platform/context';
import { InvalidInput } from '../../platform/errors';
import { borrowerNamedBy, REFERENCE_PREFIX } from '../collection/reference';
import { recordObservation } from '../collection/record';
import * as q from './queries';
import { CsvError, toCsvError } from '../../platform/csv';
import {
  checkRow,
  cell,
  EVENT_STATUS_OF,
  keyOf,
  readHeader,
  sameRow,
  UNDATED,
  type Column,
  type ParsedRow,
  type RawRow,
  type RowProblem,
} from './rules';

// POST /v1/payment_results/uploads: outcomes of debits the service cannot read from a processor, as CSV.
// The file is read row by row (the report is what is kept), every rule applied to every row, rows matched to
// borrowers, and the accepted rows recorded against what is known of their reference, in one transaction:
// all of them or none. A dry run does all of it and rolls the transaction back.

export const UPLOAD_LIMIT_BYTES = 10 * 1024 * 1024;

export interface UploadReport {
  format: 'generic' | 'annotated_export';
  rowCount: number;
  dataRowCount: number;
  matched: number;
  needsAttention: number;
  dryRun: boolean;
  rows: { row: number; reference: string; authorizerUniqueId: string | null; status: string; amountCents: number }[];
  problems: { row: number; reason: string; severity: 'error' | 'warning' }[];
}

class RolledBack extends Error {
  constructor(readonly report: UploadReport) {
    super('dry run');
  }
}

/** UTF-8 (a byte-order mark allowed) and at most 10 MB, or a 400 before any row is read. */
function checkFile(bytes: Uint8Array): void {
  if (bytes.byteLength > UPLOAD_LIMIT_BYTES) throw InvalidInput.field('file', `The file is larger than 10 MB (${UPLOAD_LIMIT_BYTES} bytes)`);
  if (!isUtf8(bytes)) throw InvalidInput.field('file', 'The file is not UTF-8 text; save it as CSV UTF-8 and upload it again');
}

const CHUNK_BYTES = 64 * 1024;
/**
 * A 10 MB file makes garbage faster than the collector's own pace reclaims it: an asynchronous collection is
 * asked for every few thousand rows, which keeps the peak memory of an upload near what it holds (bun run
 * bench upload: about 130 MB of growth rather than 180, at no measurable cost in time).
 */
const GC_HINT_ROWS = 4096;
const PRIOR_SLICE = 512;

/**
 * A CSV parser fed the bytes in slices with its back-pressure, so that only a slice's records are held at a
 * time rather than the whole file's. The caller iterates it and destroys it when done.
 */
export function parserOf(bytes: Uint8Array) {
  // Endings listed rather than guessed: a guess locks onto the header's ending and reads a later bare CR as
  // text inside a cell, which joins two rows into one. CRLF first so it is not read as CR then a blank line.
  const parser = parse({ bom: true, record_delimiter: ['\r\n', '\n', '\r'], relax_column_count: true, relax_quotes: true, skip_empty_lines: false });
  const feed = (async () => {
    for (let i = 0; i < bytes.byteLength; i += CHUNK_BYTES) {
      const slice = Buffer.from(bytes.buffer, bytes.byteOffset + i, Math.min(CHUNK_BYTES, bytes.byteLength - i));
      if (!parser.write(slice)) await once(parser, 'drain');
    }
    parser.end();
  })();
  feed.catch(() => undefined); // a parse error reaches the reader through the iteration
  return parser;
}

interface Match {
  enrollmentId: string;
  authorizerUniqueId: string;
  paymentId: string | null;
}

/** authorizer_unique_id first; else a reference that identifies exactly one borrower of the lender. */
function matchRow(ctx: Ctx, p: ParsedRow, known: Map<string, string | null>): Match | null {
  const lenderId = ctx.lender.id;
  const { sqlite } = ctx.deps;
  if (p.authorizerUniqueId) {
    // A file has many rows per borrower: each borrower is looked up once.
    let id = known.get(p.authorizerUniqueId);
    if (id === undefined) {
      id = q.enrollmentOf(sqlite, lenderId, p.authorizerUniqueId)?.id ?? null;
      known.set(p.authorizerUniqueId, id);
    }
    return id ? { enrollmentId: id, authorizerUniqueId: p.authorizerUniqueId, paymentId: null } : null;
  }
  if (!p.reference) return null;
  const own = q.paymentByReference(sqlite, lenderId, p.reference);
  if (own) return { enrollmentId: own.enrollmentId, authorizerUniqueId: own.aid, paymentId: own.id };
  const rest = p.reference.startsWith(REFERENCE_PREFIX) ? p.reference.slice(REFERENCE_PREFIX.length) : p.reference;
  const b = borrowerNamedBy(sqlite, lenderId, rest);
  return b ? { enrollmentId: b.id, authorizerUniqueId: b.aid, paymentId: null } : null;
}

const outcomeDate = (p: { status: string; settledAt: number | null; returnedAt: number | null }) =>
  p.status === 'settled' ? p.settledAt : p.status === 'returned' || p.status === 'late_return' ? p.returnedAt : null;

/** Reads the file: rows with their numbers (header = row 1) and every problem of each. */
async function readRows(bytes: Uint8Array, now: number) {
  const problems: RowProblem[] = [];
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
      if (row % GC_HINT_ROWS === 0) Bun.gc(false);
      if (!columns) {
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
          problems.push({ row: 0, rule: 0, reason: `The header lacks ${missing.join(', ')}; nothing was recorded`, severity: 'error' });
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
      if (!values.authorizer_unique_id && !values.reference && !values.payment_status) continue; // a summary row
      dataRowCount++;
      const r = checkRow({ row, values }, now);
      problems.push(...r.problems);
      if (r.parsed) parsed.push(r.parsed);
    }
  } catch (e) {
    // In the parser's words the message could quote a cell: the problem is named in ours.
    const ce = toCsvError(e);
    if (!(ce instanceof CsvError)) throw ce;
    problems.push({ row: ce.row, rule: 0, reason: `${ce.message}; nothing was recorded`, severity: 'error' });
    readable = false;
  } finally {
    parser.destroy();
  }
  if (!columns && readable) problems.push({ row: 0, rule: 0, reason: 'The file is empty: no header row', severity: 'error' });
  return { format, parsed, problems, dataRowCount, headerOk: columns !== null && readable };
}

export async function uploadResults({ ctx, input }: { ctx: Ctx; input: { bytes: Uint8Array; dryRun: boolean } }): Promise<UploadReport> {
  checkFile(input.bytes);
  const now = ctx.deps.clock.now();
  const read = await readRows(input.bytes, now);
  const problems = read.problems;

  // Rule 6: rows of one reference that disagree are all rejected; identical ones count once. The first row of
  // each key is kept; the rows of a key seen more than once are listed by key.
  const first = new Map<string, ParsedRow>();
  const repeated = new Map<string, ParsedRow[]>();
  for (const p of read.parsed) {
    const key = keyOf(p);
    const f = first.get(key);
    if (!f) first.set(key, p);
    else {
      const group = repeated.get(key);
      if (group) group.push(p);
      else repeated.set(key, [f, p]);
    }
  }
  const accepted: ParsedRow[] = [];
  for (const p of read.parsed) {
    const key = keyOf(p);
    const group = repeated.get(key);
    if (!group) accepted.push(p);
    else if (group.every((g) => sameRow(g, group[0]!))) {
      if (group[0] === p) accepted.push(p);
      else problems.push({ row: p.row, rule: 6, reason: `identical to row ${group[0]!.row} for reference ${key}; counted once`, severity: 'warning' });
    } else {
      problems.push({ row: p.row, rule: 6, reason: `rows ${group.map((g) => g.row).join(', ')} for reference ${key} disagree; all of them are rejected`, severity: 'error' });
    }
  }
  first.clear();

  const run = (tx: Ctx & { tx: Tx }): UploadReport => {
    const rows: UploadReport['rows'] = [];
    let matched = 0;
    let n = 0;
    const known = new Map<string, string | null>();
    let priors = new Map<string, q.UploadedRow>();
    for (const p of accepted) {
      if (n % PRIOR_SLICE === 0) {
        // After rule 6 a key appears once in a file: what is stored for it now is what its row is decided on.
        const keys = accepted.slice(n, n + PRIOR_SLICE).map(keyOf);
        priors = new Map(q.uploadedAmong(tx.deps.sqlite, tx.lender.id, keys).map((u) => [u.reference, u]));
      }
      if (++n % GC_HINT_ROWS === 0) Bun.gc(false);
      const key = keyOf(p);
      const m = matchRow(tx, p, known);
      rows.push({ row: p.row, reference: key, authorizerUniqueId: m?.authorizerUniqueId ?? p.authorizerUniqueId, status: p.status, amountCents: p.amountCents });
      if (m) matched++;
      else problems.push({ row: p.row, rule: 7, reason: `no enrolled borrower matches reference ${key}; stored, it is matched when uploaded again with authorizer_unique_id`, severity: 'warning' });
      applyRow(tx, p, key, priors.get(key) ?? null, m, problems, now, !input.dryRun);
    }
    return {
      format: read.format,
      rowCount: accepted.length,
      dataRowCount: read.dataRowCount,
      matched,
      needsAttention: accepted.length - matched,
      dryRun: input.dryRun,
      rows,
      problems: problems
        .sort((a, b) => a.row - b.row || a.rule - b.rule)
        .map(({ row, reason, severity }) => ({ row, reason, severity })),
    };
  };

  if (!read.headerOk || problems.some((p) => p.row === 0)) {
    return { format: read.format, rowCount: 0, dataRowCount: read.dataRowCount, matched: 0, needsAttention: 0, dryRun: input.dryRun, rows: [], problems: problems.map(({ row, reason, severity }) => ({ row, reason, severity })) };
  }
  if (!input.dryRun) return withTransaction(ctx, run);
  // Rolled back all the same, so that nothing a dry run might touch can stay.
  try {
    withTransaction(ctx, (tx) => {
      throw new RolledBack(run(tx));
    });
  } catch (e) {
    if (e instanceof RolledBack) return e.report;
    throw e;
  }
  throw new Error('unreachable');
}

/**
 * The re-sending rules, against what is stored for the reference: a new status is recorded (1); an
 * identical row only fills a date recorded without one, never changing one (2); an outcome dated before the
 * latest recorded one is ignored (3); an undated status never replaces a settled or returned outcome (4).
 * A dry run decides the same and writes nothing: after rule 6 a file has one row per key, so no row's
 * decision depends on another row's writes, and the report of a dry run is the report of the real upload.
 */
function applyRow(tx: Ctx & { tx: Tx }, p: ParsedRow, key: string, prior: q.UploadedRow | null, m: Match | null, problems: RowProblem[], now: number, write: boolean): void {
  const lenderId = tx.lender.id;
  const { sqlite } = tx.deps;
  const record = (status: ParsedRow['status']) => {
    if (!m || !write) return;
    recordObservation(tx, {
      lenderId,
      reference: key,
      status: EVENT_STATUS_OF[status],
      amountCents: p.amountCents,
      returnCode: p.returnCode,
      message: null,
      occurredAt: outcomeDate(p) ?? p.submittedAt,
      source: 'upload',
      sourceEventId: `upload:${key}:${EVENT_STATUS_OF[status]}`,
      enrollmentId: m.enrollmentId,
      authorizerUniqueId: m.authorizerUniqueId,
      paymentId: m.paymentId,
      connectionId: null,
    });
  };
  const values = { aid: m?.authorizerUniqueId ?? p.authorizerUniqueId, enrollmentId: m?.enrollmentId ?? null, matched: m !== null, batchId: p.batchId, now };
  if (!prior) {
    if (write) q.insertUploaded(sqlite, { lenderId, reference: key, status: p.status, amountCents: p.amountCents, submittedAt: p.submittedAt, settledAt: p.settledAt, returnedAt: p.returnedAt, returnCode: p.returnCode, ...values });
    record(p.status);
    return;
  }
  const wasUnmatched = !prior.matched && m !== null;
  if (prior.status === p.status) {
    // Rule 2: dates recorded without one are filled in; a recorded date stays.
    if (write) q.updateUploaded(sqlite, { id: prior.id, outcome: null, settledAt: p.settledAt, returnedAt: p.returnedAt, ...values });
    if (wasUnmatched) record(p.status);
    return;
  }
  const priorOutcome = ['settled', 'returned', 'late_return'].includes(prior.status);
  if (UNDATED.has(p.status) && priorOutcome) {
    problems.push({ row: p.row, rule: 8, reason: `${p.status} does not replace the ${prior.status} outcome recorded for reference ${key}; ignored`, severity: 'warning' });
    return;
  }
  const latest = Math.max(prior.settledAt ?? -Infinity, prior.returnedAt ?? -Infinity);
  const date = outcomeDate(p);
  if (date !== null && Number.isFinite(latest) && date < latest) {
    problems.push({ row: p.row, rule: 8, reason: `its outcome date is earlier than the latest outcome recorded for reference ${key}; ignored`, severity: 'warning' });
    return;
  }
  if (write) q.updateUploaded(sqlite, { id: prior.id, outcome: { status: p.status, amountCents: p.amountCents, returnCode: p.returnCode }, settledAt: p.settledAt, returnedAt: p.returnedAt, ...values });
  record(p.status);
}
