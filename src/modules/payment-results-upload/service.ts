import { newId } from '../../platform/ids';
import { writeGate } from '../../platform/context';
import { uploadWorkerOf } from './offload';
import type { UploadAnswer, UploadForm, UploadInput, UploadReport, UploadSummary } from './types';
import type { Ctx } from '../../deps';
import { readSnapshot } from '../../platform/context';
import { decideSlice } from './slice';
import { recordChanges } from './changes';
import { Lookups } from './match';
import { budgetOf, budgetProblem, checkBudget, checkFile, fileOf, GC_HINT_ROWS, NO_ROWS, Problems, readAccepted, reportOf, SLICE, UploadStopped, type UploadBudget } from './read';
import { ALWAYS, recordInSlices, type WriteTurn } from './recording';

// POST /v1/payment_results/uploads: outcomes of debits the service cannot read from a processor, as CSV.
// The file is read row by row (the report is what is kept), every rule applied to every row, rows matched to
// borrowers, and the accepted rows recorded against what is known of their reference, a slice at a time, in
// transactions that let other writes go between two slices: once the first is committed, the upload is
// recorded to its end exactly once, resumed after a crash or a stop if need be (recordInSlices). A dry run
// decides every slice on one snapshot and writes nothing. The steps, one file each: read.ts reads and checks
// the file, match.ts finds each row's borrower and payment, slice.ts decides a slice's rows, recording.ts
// records them.

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

const JSON_ROWS_A_PART = 4096;

/**
 * The report's counts in the API's words: snake_case, and the camelCase names it answered with before, the
 * same values, kept until 0.4.0 (deprecated in the Report schema).
 */
const countsJson = (r: UploadReport) => ({
  format: r.format,
  row_count: r.rowCount,
  data_row_count: r.dataRowCount,
  matched: r.matched,
  needs_attention: r.needsAttention,
  already_recorded: r.alreadyRecorded,
  notifications_of_change: r.notificationsOfChange,
  dry_run: r.dryRun,
  rowCount: r.rowCount,
  dataRowCount: r.dataRowCount,
  needsAttention: r.needsAttention,
  dryRun: r.dryRun,
});

/** A row of the report in the API's words, with its deprecated camelCase copies. */
const rowJson = (r: UploadReport['rows'][number]) => ({
  row: r.row,
  reference: r.reference,
  authorizer_unique_id: r.authorizerUniqueId,
  status: r.status,
  amount_cents: r.amountCents,
  authorizerUniqueId: r.authorizerUniqueId,
  amountCents: r.amountCents,
});

/**
 * The report's JSON (the Report schema, in its order) as UTF-8 parts of a few hundred kilobytes, so that a
 * report of tens of megabytes is never one string and a copy of it at once: the rows are written a slice at
 * a time, and the parts go to the answer as they are.
 */
function reportJson(report: UploadReport): Uint8Array[] {
  const enc = new TextEncoder();
  const { rows, problems } = report;
  const parts = [enc.encode(`${JSON.stringify(countsJson(report)).slice(0, -1)},"rows":[`)];
  for (let i = 0; i < rows.length; i += JSON_ROWS_A_PART) {
    const slice = JSON.stringify(rows.slice(i, i + JSON_ROWS_A_PART).map(rowJson)).slice(1, -1);
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
    return { format: 'generic', rowCount: 0, dataRowCount: 0, matched: 0, needsAttention: 0, alreadyRecorded: 0, notificationsOfChange: 0, dryRun: args.input.dryRun, rows: [], problems: problems.report() };
  }
}

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
  if (!read.headerOk || read.problems.fileError) return reportOf(read, [], NO_ROWS, input.dryRun);
  if (!input.dryRun) {
    const upload = { id: newId(), creator: input.creator ?? null, now, read, done: 0, matched: 0, alreadyRecorded: 0 };
    return recordInSlices(ctx, upload, { file: bytes, budget, onRecording }, writeTurn, othersWait);
  }
  // A dry run writes nothing: it decides every slice on one snapshot, in a deferred transaction that never
  // takes the write lock, and is rolled back all the same.
  return readSnapshot(ctx, async (tx) => {
    const rows: UploadReport['rows'] = [];
    let matched = 0;
    let alreadyRecorded = 0;
    const lookups = new Lookups(tx);
    for (let n = 0; n < read.accepted.length; n += SLICE) {
      // Past its time, or its caller gone.
      checkBudget(budget);
      const decided = await decideSlice(tx, read.accepted.slice(n, n + SLICE), lookups, now, true);
      for (const r of decided.rows) rows.push(r);
      for (const p of decided.problems) read.problems.add(p);
      matched += decided.matched;
      alreadyRecorded += decided.alreadyRecorded;
      if ((n + SLICE) % GC_HINT_ROWS === 0) Bun.gc(false);
    }
    const changes = await recordChanges(tx, read.changes, now, true);
    for (const p of changes.problems) read.problems.add(p);
    return reportOf(read, rows, { rowCount: read.accepted.length, matched, alreadyRecorded, changes: changes.recorded }, true);
  });
}

