import type { Ctx } from '../../deps';
import type { Tx } from '../../platform/context';
import type { PaymentMatch } from '../collection/reference';
import { knownAmong, recordSlice, staleAgainst, type Known, type Observation } from '../collection/record';
import { type UploadedRow, type UploadedWrite } from './store';
import { EVENT_STATUS_OF, keyOf, UNDATED, type ParsedRow, type RowProblem } from './rules';
import type { UploadReport } from './types';
import type { Lookups } from './match';

// One slice of an upload's accepted rows, in the transaction (or the dry run's snapshot) that decides it: what
// is stored and known of its references, looked up for the slice at once, each row decided by the re-sending
// rules, and the slice's writes and outcomes recorded.

/**
 * Decides a slice of accepted rows and, unless it is a dry run, records it: what is stored for each row's
 * reference, what matching needs and what is recorded of each outcome, read for the slice at once, then each
 * row decided on them (after rule 6 a key appears once in a file: what is stored for it now is what its row is
 * decided on).
 */
export async function decideSlice(tx: Ctx & { tx: Tx }, slice: ParsedRow[], lookups: Lookups, now: number, dryRun: boolean): Promise<SliceDecided> {
  const priors = new Map((await tx.deps.stores.uploads.uploadedAmong(tx, tx.lender.id, slice.map(keyOf))).map((u) => [u.reference, u]));
  await lookups.load(slice);
  // What is recorded of each row's reference and status, read for the slice at once.
  const known = await knownAmong(tx, tx.lender.id, 'upload', slice.map((p) => ({ reference: keyOf(p), sourceEventId: sourceEventIdOf(keyOf(p), p.status) })));
  return recordSliceOf(tx, slice, (p, i) => decideRow(tx.lender.id, p, priors.get(keyOf(p)) ?? null, lookups.match(p), known[i]!, now), lookups, dryRun);
}

/**
 * Every ledger total is given exactly: no slice of an upload may take the credited total of a borrower it
 * records for past 2^53 - 1 cents. The totals are kept across the upload's slices, each borrower's read whole
 * the first time a slice records for it and then only from its last entry counted (store.creditsSince), so
 * that a slice reads its own borrowers' new entries rather than their whole ledgers again.
 */
export class LedgerGuard {
  private readonly totals = new Map<string, { credited: number; last: number }>();
  /** The totals as they were before the transaction under way changed them (`within`). */
  private before: Map<string, { credited: number; last: number } | undefined> | null = null;

  /** The first of the slice's borrowers whose credited total is now past 2^53 - 1 cents (by its identifier), or null. */
  async pastExact(tx: Ctx & { tx: Tx }, borrowers: Map<string, string | null>): Promise<{ borrower: string | null } | null> {
    const since = [...borrowers.keys()].map((enrollmentId) => ({ enrollmentId, after: this.totals.get(enrollmentId)?.last ?? 0 }));
    for (const f of await tx.deps.stores.uploads.creditsSince(tx, since)) {
      const credited = (f.from === 0 ? 0 : this.totals.get(f.enrollmentId)!.credited) + f.credited;
      if (credited > Number.MAX_SAFE_INTEGER) return { borrower: borrowers.get(f.enrollmentId) ?? null };
      if (this.before && !this.before.has(f.enrollmentId)) this.before.set(f.enrollmentId, this.totals.get(f.enrollmentId));
      this.totals.set(f.enrollmentId, { credited, last: f.last });
    }
    return null;
  }

  /**
   * Runs one transaction's work (`fn`): when it throws, the transaction was undone, and so are the totals it
   * counted, so that the transaction can be run again on them.
   */
  async within<T>(fn: () => Promise<T>): Promise<T> {
    this.before = new Map();
    try {
      return await fn();
    } catch (e) {
      for (const [id, total] of this.before) {
        if (total === undefined) this.totals.delete(id);
        else this.totals.set(id, total);
      }
      throw e;
    } finally {
      this.before = null;
    }
  }
}

const outcomeDate = (p: { status: string; settledAt: number | null; returnedAt: number | null }) =>
  p.status === 'settled' ? p.settledAt : p.status === 'returned' || p.status === 'late_return' ? p.returnedAt : null;

/** Why an accepted row matched no borrower, and what would match it. */
function unmatchedReason(p: ParsedRow, key: string): string {
  if (p.authorizerUniqueId) {
    return `the borrower ${p.authorizerUniqueId} is not enrolled; stored, it is matched when uploaded again after the borrower is enrolled`;
  }
  return `no enrolled borrower matches reference ${key}; stored, it is matched when uploaded again with authorizer_unique_id`;
}

/** Whether a row gives a date its reference was recorded without (rule 2 fills it in). */
const fillsDate = (prior: UploadedRow, p: ParsedRow) => (prior.settledAt === null && p.settledAt !== null) || (prior.returnedAt === null && p.returnedAt !== null);

/** The note of a row an earlier upload had recorded already. */
const alreadyRecordedReason = (key: string, status: ParsedRow['status']) =>
  `reference ${key} is already recorded as ${status} by an earlier upload; this row adds nothing and is not recorded again`;

/** The source event of a row's outcome: one per reference and status. */
export const sourceEventIdOf = (key: string, status: ParsedRow['status']) => `upload:${key}:${EVENT_STATUS_OF[status]}`;

/** What a slice of rows was decided as: the report's rows and problems, in row order, its matches, and the rows recorded before. */
export interface SliceDecided {
  rows: UploadReport['rows'];
  problems: RowProblem[];
  matched: number;
  /** Rows an earlier upload had recorded already (alreadyRecorded below). */
  alreadyRecorded: number;
  /** The borrowers it records an outcome for: enrollment id → authorizer_unique_id. */
  borrowers: Map<string, string | null>;
}

/**
 * What one row comes to, decided without writing: its line of the report, its problems found so far (rule 7
 * and ignored rows), the write of its reference, and the outcome to record (a matched row that moves it).
 */
interface RowDecided {
  row: UploadReport['rows'][number];
  matched: boolean;
  /** Its reference is recorded already as the row says it: the row adds nothing. */
  alreadyRecorded: boolean;
  problems: RowProblem[];
  write: UploadedWrite | null;
  observation: Observation | null;
}

/**
 * Decides a slice's rows, then records them: the references' writes in one store call and the outcomes in
 * one savepoint of the slice (recordSlice: borrower by borrower, row by row only when a row faults). A dry
 * run writes nothing and answers what the upload would, the same warning for a status that would not move
 * forward. The problems come in row order, each row's as it would find them.
 */
async function recordSliceOf(
  tx: Ctx & { tx: Tx },
  slice: ParsedRow[],
  decide: (p: ParsedRow, i: number) => RowDecided,
  lookups: Lookups,
  dryRun: boolean,
): Promise<SliceDecided> {
  const decided = slice.map(decide);
  const outcomes: (RowProblem | null)[] = new Array(decided.length).fill(null);
  const stale = (d: RowDecided, current: string | null): RowProblem => ({
    row: d.row.row,
    rule: 8,
    reason: `reference ${d.row.reference} is recorded as ${current}, which ${d.row.status} does not move forward; the status was kept`,
    severity: 'warning',
  });
  // The service's own payment: the row is the lender's report, and the payment's outcome is its processor's word.
  const reported = (d: RowDecided, hold: string | null): RowProblem => ({
    row: d.row.row,
    rule: 8,
    reason: `reference ${d.row.reference} is a payment the service made: ${d.row.status} is kept as your report, and the payment's outcome is what its processor says; ${hold === null ? 'the processor is asked now' : `held: ${hold}`}`,
    severity: 'warning',
  });
  if (dryRun) {
    for (let i = 0; i < decided.length; i++) {
      const o = decided[i]!.observation;
      if (!o) continue;
      const current = await staleAgainst(tx, o);
      if (current !== undefined) outcomes[i] = stale(decided[i]!, current);
      else if (o.paymentId) outcomes[i] = reported(decided[i]!, null);
    }
  } else {
    const writes: UploadedWrite[] = [];
    for (const d of decided) if (d.write) writes.push(d.write);
    await tx.deps.stores.uploads.saveUploaded(tx, writes);
    const recorded = await recordSlice(tx, decided.map((d) => d.observation));
    for (let i = 0; i < decided.length; i++) {
      const r = recorded[i];
      const d = decided[i]!;
      if (r === null) outcomes[i] = { row: d.row.row, rule: 8, reason: `the outcome could not be recorded for reference ${d.row.reference}; it was set aside for the operator`, severity: 'error' };
      else if (r && !r.recorded && r.why === 'stale') outcomes[i] = stale(d, r.current);
      else if (r?.recorded && r.report) outcomes[i] = reported(d, r.report.hold);
    }
  }
  // Nacha's WEB debit rule, where the lender's policy requires it: a row of a debit to an account without
  // validation evidence is reported (it is recorded all the same: the debit was made).
  const unvalidated = await lookups.unvalidatedAmong([...new Set(decided.flatMap((d) => (d.observation?.enrollmentId ? [d.observation.enrollmentId] : [])))]);
  const out: SliceDecided = { rows: [], problems: [], matched: 0, alreadyRecorded: 0, borrowers: new Map() };
  for (let i = 0; i < decided.length; i++) {
    const d = decided[i]!;
    out.rows.push(d.row);
    if (d.matched) out.matched++;
    if (d.alreadyRecorded) out.alreadyRecorded++;
    if (d.observation?.enrollmentId) out.borrowers.set(d.observation.enrollmentId, d.observation.authorizerUniqueId);
    for (const p of d.problems) out.problems.push(p);
    if (outcomes[i]) out.problems.push(outcomes[i]!);
    if (d.observation?.enrollmentId && unvalidated.has(d.observation.enrollmentId)) {
      out.problems.push({
        row: d.row.row,
        rule: 8,
        reason: `borrower ${d.observation.authorizerUniqueId} is debited from a bank account without validation evidence (Nacha's WEB debit rule asks for one before the first debit to it, and after its number changes); send account_validation with the borrower`,
        severity: 'warning',
      });
    }
  }
  return out;
}

/**
 * The re-sending rules, against what is stored for the reference: a new status is recorded (1); an
 * identical row only fills a date recorded without one, never changing one (2); an outcome dated before the
 * latest recorded one is ignored (3); an undated status never replaces a settled or returned outcome (4).
 * Decided without writing, the same for a dry run: after rule 6 a file has one row per key, so no row's
 * decision depends on another row's writes, and the report of a dry run is the report of the real upload.
 */
function decideRow(lenderId: string, p: ParsedRow, prior: UploadedRow | null, m: PaymentMatch | null, known: Known, now: number): RowDecided {
  const key = keyOf(p);
  const d: RowDecided = {
    row: { row: p.row, reference: key, authorizerUniqueId: m?.authorizerUniqueId ?? p.authorizerUniqueId, status: p.status, amountCents: p.amountCents },
    matched: m !== null,
    alreadyRecorded: false,
    problems: [],
    write: null,
    observation: null,
  };
  if (!m) d.problems.push({ row: p.row, rule: 7, reason: unmatchedReason(p, key), severity: 'warning' });
  const record = () => {
    if (!m) return;
    d.observation = {
      lenderId,
      reference: key,
      status: EVENT_STATUS_OF[p.status],
      amountCents: p.amountCents,
      returnCode: p.returnCode,
      message: null,
      occurredAt: outcomeDate(p) ?? p.submittedAt,
      source: 'upload',
      sourceEventId: sourceEventIdOf(key, p.status),
      enrollmentId: m.enrollmentId,
      authorizerUniqueId: m.authorizerUniqueId,
      paymentId: m.paymentId,
      connectionId: null,
      known,
    };
  };
  const values = { aid: m?.authorizerUniqueId ?? p.authorizerUniqueId, enrollmentId: m?.enrollmentId ?? null, matched: m !== null, batchId: p.batchId, now };
  if (!prior) {
    d.write = { kind: 'add', lenderId, reference: key, status: p.status, amountCents: p.amountCents, submittedAt: p.submittedAt, settledAt: p.settledAt, returnedAt: p.returnedAt, returnCode: p.returnCode, ...values };
    record();
    return d;
  }
  const wasUnmatched = !prior.matched && m !== null;
  if (prior.status === p.status) {
    // Rule 2: dates recorded without one are filled in; a recorded date stays.
    d.write = { kind: 'change', id: prior.id, outcome: null, settledAt: p.settledAt, returnedAt: p.returnedAt, ...values };
    if (wasUnmatched) record();
    else if (!fillsDate(prior, p)) {
      // The same outcome sent again (the same file, or rows an earlier one had): recorded once, and the report
      // says so rather than count it as recorded now.
      d.alreadyRecorded = true;
      d.problems.push({ row: p.row, rule: 8, reason: alreadyRecordedReason(key, p.status), severity: 'warning' });
    }
    return d;
  }
  const priorOutcome = ['settled', 'returned', 'late_return'].includes(prior.status);
  if (UNDATED.has(p.status) && priorOutcome) {
    d.problems.push({ row: p.row, rule: 8, reason: `${p.status} does not replace the ${prior.status} outcome recorded for reference ${key}; ignored`, severity: 'warning' });
    return d;
  }
  const latest = Math.max(prior.settledAt ?? -Infinity, prior.returnedAt ?? -Infinity);
  const date = outcomeDate(p);
  if (date !== null && Number.isFinite(latest) && date < latest) {
    d.problems.push({ row: p.row, rule: 8, reason: `its outcome date is earlier than the latest outcome recorded for reference ${key}; ignored`, severity: 'warning' });
    return d;
  }
  d.write = { kind: 'change', id: prior.id, outcome: { status: p.status, amountCents: p.amountCents, returnCode: p.returnCode }, settledAt: p.settledAt, returnedAt: p.returnedAt, ...values };
  record();
  return d;
}
