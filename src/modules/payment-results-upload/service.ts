import { parse } from 'csv-parse';
import { and, eq } from 'drizzle-orm';
import { enrollments, payments, uploadedResults } from '../../../db/schema';
import type { Ctx } from '../../deps';
import { withTransaction, type Tx } from '../../platform/context';
import { InvalidInput } from '../../platform/errors';
import { borrowersAmong } from '../collection/queries';
import { recordObservation } from '../collection/record';
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
const REFERENCE_PREFIX = 'DRS-';

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
function decode(bytes: Uint8Array): string {
  if (bytes.byteLength > UPLOAD_LIMIT_BYTES) throw InvalidInput.field('file', `The file is larger than 10 MB (${UPLOAD_LIMIT_BYTES} bytes)`);
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw InvalidInput.field('file', 'The file is not UTF-8 text; save it as CSV UTF-8 and upload it again');
  }
}

interface Match {
  enrollmentId: string;
  authorizerUniqueId: string;
  paymentId: string | null;
}

/** authorizer_unique_id first; else a reference that identifies exactly one borrower of the lender. */
function matchRow(ctx: Ctx & { tx: Tx }, p: ParsedRow): Match | null {
  const lenderId = ctx.lender.id;
  if (p.authorizerUniqueId) {
    const e = ctx.tx
      .select({ id: enrollments.id })
      .from(enrollments)
      .where(and(eq(enrollments.lenderId, lenderId), eq(enrollments.authorizerUniqueId, p.authorizerUniqueId)))
      .get();
    return e ? { enrollmentId: e.id, authorizerUniqueId: p.authorizerUniqueId, paymentId: null } : null;
  }
  if (!p.reference) return null;
  const own = ctx.tx
    .select({ id: payments.id, enrollmentId: payments.enrollmentId, aid: payments.authorizerUniqueId })
    .from(payments)
    .where(and(eq(payments.lenderId, lenderId), eq(payments.reference, p.reference)))
    .get();
  if (own) return { enrollmentId: own.enrollmentId, authorizerUniqueId: own.aid, paymentId: own.id };
  const rest = p.reference.startsWith(REFERENCE_PREFIX) ? p.reference.slice(REFERENCE_PREFIX.length) : p.reference;
  const lefts: string[] = [];
  for (let i = rest.indexOf('-'); i > 0; i = rest.indexOf('-', i + 1)) lefts.push(rest.slice(0, i));
  if (lefts.length === 0) return null;
  const found = borrowersAmong(ctx.deps.sqlite, lenderId, lefts);
  return found.length === 1 ? { enrollmentId: found[0]!.id, authorizerUniqueId: found[0]!.aid, paymentId: null } : null;
}

const outcomeDate = (p: { status: string; settledAt: number | null; returnedAt: number | null }) =>
  p.status === 'settled' ? p.settledAt : p.status === 'returned' || p.status === 'late_return' ? p.returnedAt : null;

/** Reads the file: rows with their numbers (header = row 1) and every problem of each. */
async function readRows(text: string, now: number) {
  const problems: RowProblem[] = [];
  const parsed: ParsedRow[] = [];
  let dataRowCount = 0;
  let format: UploadReport['format'] = 'generic';
  let columns: (Column | null)[] | null = null;
  let row = 0;
  try {
    const parser = parse(text, { bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: false });
    for await (const record of parser as AsyncIterable<string[]>) {
      row++;
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
      columns.forEach((c, i) => {
        if (c) values[c] = cell(record[i]);
      });
      if (record.every((v) => cell(v) === '')) continue; // a blank row
      if (!values.authorizer_unique_id && !values.reference && !values.payment_status) continue; // a summary row
      dataRowCount++;
      const r = checkRow({ row, values }, now);
      problems.push(...r.problems);
      if (r.parsed) parsed.push(r.parsed);
    }
  } catch (e) {
    problems.push({ row: Math.max(row, 1), rule: 0, reason: `The file could not be read as CSV from this row on: ${(e as Error).message.split('\n')[0]}`, severity: 'error' });
  }
  if (!columns) problems.push({ row: 0, rule: 0, reason: 'The file is empty: no header row', severity: 'error' });
  return { format, parsed, problems, dataRowCount, headerOk: columns !== null };
}

export async function uploadResults({ ctx, input }: { ctx: Ctx; input: { bytes: Uint8Array; dryRun: boolean } }): Promise<UploadReport> {
  const text = decode(input.bytes);
  const now = ctx.deps.clock.now();
  const read = await readRows(text, now);
  const problems = read.problems;

  // Rule 6: rows of one reference that disagree are all rejected; identical ones count once.
  const byKey = new Map<string, ParsedRow[]>();
  for (const p of read.parsed) byKey.set(keyOf(p), [...(byKey.get(keyOf(p)) ?? []), p]);
  const accepted: ParsedRow[] = [];
  for (const p of read.parsed) {
    const group = byKey.get(keyOf(p))!;
    if (group.length === 1) accepted.push(p);
    else if (group.every((g) => sameRow(g, group[0]!))) {
      if (group[0] === p) accepted.push(p);
      else problems.push({ row: p.row, rule: 6, reason: `identical to row ${group[0]!.row} for reference ${keyOf(p)}; counted once`, severity: 'warning' });
    } else {
      problems.push({ row: p.row, rule: 6, reason: `rows ${group.map((g) => g.row).join(', ')} for reference ${keyOf(p)} disagree; all of them are rejected`, severity: 'error' });
    }
  }

  const run = (tx: Ctx & { tx: Tx }): UploadReport => {
    const rows: UploadReport['rows'] = [];
    let matched = 0;
    for (const p of accepted) {
      const key = keyOf(p);
      const m = matchRow(tx, p);
      rows.push({ row: p.row, reference: key, authorizerUniqueId: m?.authorizerUniqueId ?? p.authorizerUniqueId, status: p.status, amountCents: p.amountCents });
      if (m) matched++;
      else problems.push({ row: p.row, rule: 7, reason: `no enrolled borrower matches reference ${key}; stored, it is matched when uploaded again with authorizer_unique_id`, severity: 'warning' });
      applyRow(tx, p, key, m, problems, now);
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
 */
function applyRow(tx: Ctx & { tx: Tx }, p: ParsedRow, key: string, m: Match | null, problems: RowProblem[], now: number): void {
  const lenderId = tx.lender.id;
  const prior = tx.tx.select().from(uploadedResults).where(and(eq(uploadedResults.lenderId, lenderId), eq(uploadedResults.reference, key))).get();
  const record = (status: ParsedRow['status']) => {
    if (!m) return;
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
  const values = {
    authorizerUniqueId: m?.authorizerUniqueId ?? p.authorizerUniqueId,
    enrollmentId: m?.enrollmentId ?? null,
    matched: m !== null,
    batchId: p.batchId,
    updatedAt: now,
  };
  if (!prior) {
    tx.tx
      .insert(uploadedResults)
      .values({ lenderId, reference: key, status: p.status, amountCents: p.amountCents, submittedAt: p.submittedAt, settledAt: p.settledAt, returnedAt: p.returnedAt, returnCode: p.returnCode, ...values })
      .run();
    record(p.status);
    return;
  }
  const where = eq(uploadedResults.id, prior.id);
  const wasUnmatched = !prior.matched && m !== null;
  if (prior.status === p.status) {
    // Rule 2: dates recorded without one are filled in; a recorded date stays.
    tx.tx
      .update(uploadedResults)
      .set({ settledAt: prior.settledAt ?? p.settledAt, returnedAt: prior.returnedAt ?? p.returnedAt, ...values })
      .where(where)
      .run();
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
  tx.tx
    .update(uploadedResults)
    .set({
      status: p.status,
      amountCents: p.amountCents,
      settledAt: prior.settledAt ?? p.settledAt,
      returnedAt: prior.returnedAt ?? p.returnedAt,
      returnCode: p.returnCode,
      ...values,
    })
    .where(where)
    .run();
  record(p.status);
}
