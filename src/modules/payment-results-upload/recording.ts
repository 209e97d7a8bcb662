import type { UploadReport } from './types';
import type { Ctx } from '../../deps';
import { readSnapshot, savepoint, transaction, type Tx } from '../../platform/context';
import { Unavailable } from '../../platform/errors';
import { againOnConflict } from '../../platform/pg';
import type { RowProblem } from './rules';
import { readReturnRates, saveReturnRates } from '../return-rates/watch';
import { decideSlice, LedgerGuard, type SliceDecided } from './slice';
import { Lookups } from './match';
import { recordChanges } from './changes';
import { HeldLease } from '../../platform/leases';
import type { SealedColumn } from '../../platform/vault';
import { checkBudget, GC_HINT_ROWS, readAccepted, reportOf, type ReadFile, type Tally, type UploadBudget } from './read';

// Recording an upload's accepted rows, a slice at a time, each slice in its own transaction and its own turn
// at the write lock: exactly once, resumed after a crash or a stop from `unfinished_uploads`, held by one
// replica at a time, and the lender's return rates evaluated once at the end.

/** How an upload's transaction gets the write lock: after the write gate's turn, or as the worker's exclusive hold. */
export type WriteTurn = <T>(fn: () => T | Promise<T>) => Promise<T>;

/**
 * Where nothing tells whether other writes wait for the lock (an upload in this thread, a database in memory,
 * whose transactions take turns without the gate), they are taken to: a transaction records one slice. So it
 * does on PostgreSQL, where there is no lock to share and a transaction holds its rows' locks no longer.
 */
export const ALWAYS = () => true;

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
const NOTHING_DECIDED: SliceDecided = { rows: [], problems: [], matched: 0, alreadyRecorded: 0, borrowers: new Map() };

/** How many times a transaction of an upload is run when PostgreSQL undoes it in a deadlock. */
const SLICE_ATTEMPTS = 3;

/** What one transaction of an upload recorded, taken in by the run once it is committed. */
interface Done {
  /** The count of accepted rows done, matched and recorded already, after it. */
  end: number;
  m: number;
  a: number;
  /** It finished the upload; refused: the file was refused at its first slice, with nothing recorded. */
  last: boolean;
  refused: boolean;
  rows: UploadReport['rows'];
  problems: RowProblem[];
  /** Notifications of Change recorded (its last transaction's). */
  changes: number;
}

/** An upload as it is recorded: its id (its history record's), who sent it, the time its rows were checked against. */
interface Recording {
  id: string;
  creator: string | null;
  now: number;
  read: ReadFile;
  /** Accepted rows recorded before this run (a resumed upload's), how many of them matched, and how many were recorded already. */
  done: number;
  matched: number;
  alreadyRecorded: number;
}

/**
 * The longest one transaction of an upload goes on taking slices while no other write waits for the lock (a
 * crash undoes at most this much). Each commit has a cost of its own (every page the transaction changed is
 * written again, then synced): a transaction of one slice each made a 10 MB upload take about twice as long.
 */
const LONGEST_TRANSACTION_MS = 1000;

/**
 * Records the accepted rows from `u.done` on in transactions, each taken in its own turn of the write gate and
 * recording slices (the store's sliceRows) one after the other, until another write waits for the lock (`othersWait`,
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
export async function recordInSlices(
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
  let alreadyRecorded = u.alreadyRecorded;
  // Whether unfinished_uploads holds the upload (a resumed one does).
  let stored = first === null;
  const size = ctx.deps.stores.uploads.sliceRows;
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
        // A transaction PostgreSQL undoes in a deadlock (a job holding a borrower the slice writes for) is run
        // again: it changes nothing outside itself until it is committed (its rows, problems and the ledger
        // totals counted are taken in after), so a second run decides on what is stored, as the first did.
        const committed = await againOnConflict(SLICE_ATTEMPTS, () =>
          guard.within(() =>
            transaction(ctx, async (tx) => {
              await tx.deps.stores.uploads.serializeUploads(tx, lenderId);
              if (stored && (await tx.deps.stores.uploads.unfinishedDone(tx, u.id)) !== from) throw new UploadTakenOver(u.id);
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
              const out: Done = { end, m: matched, a: alreadyRecorded, last: false, refused: false, rows: [], problems: [], changes: 0 };
              for (const decided of got) {
                for (const r of decided.rows) out.rows.push(r);
                for (const p of decided.problems) out.problems.push(p);
                out.m += decided.matched;
                out.a += decided.alreadyRecorded;
              }
              if (stop) {
                const recorded = end === 0 ? 'nothing was recorded' : `the rows from row ${stop.row} on were not recorded, those before it were`;
                const whose = stop.borrower === null ? 'a borrower' : `borrower ${stop.borrower}`;
                out.problems.push({ row: 0, rule: 0, reason: `The ledger of ${whose} would pass $90,071,992,547,409.91, the most a total can be given exactly; ${recorded}`, severity: 'error' });
              }
              out.last = stop !== null || end === accepted.length;
              // A file refused at its first slice: nothing of it is recorded, nor in the history.
              if (out.last && end === 0 && stop) return { ...out, refused: true };
              const tally: Tally = { rowCount: end, matched: out.m, alreadyRecorded: out.a };
              if (out.last) {
                // The file's Notifications of Change, with its last slice: recorded with the upload, once.
                const changed = await recordChanges(tx, u.read.changes, u.now, false);
                for (const p of changed.problems) out.problems.push(p);
                out.changes = tally.changes = changed.recorded;
                const problems = u.read.problems.copy();
                for (const p of out.problems) problems.add(p);
                await finish(tx, u, reportOf({ ...u.read, problems }, rows.concat(out.rows), tally, false), stored);
              }
              else if (!stored) await tx.deps.stores.uploads.beginUnfinished(tx, { id: u.id, lenderId, creator: u.creator, fileSealed: sealed!, checkedAt: u.now, done: end, matched: out.m, alreadyRecorded: out.a });
              else await tx.deps.stores.uploads.advanceUnfinished(tx, u.id, { done: end, matched: out.m, alreadyRecorded: out.a });
              return out;
            }),
          ),
        );
        for (const r of committed.rows) rows.push(r);
        for (const p of committed.problems) u.read.problems.add(p);
        // Said before the lock is let go, so that nothing can stop the service between the commit and the
        // moment it is known that the upload is partly recorded.
        if (!stored && !committed.last) first?.onRecording?.();
        return committed;
      });
      done = t.end;
      matched = t.m;
      alreadyRecorded = t.a;
      if (t.last) {
        // Refused at its very first slice, nothing of it is recorded: the rates are as they were.
        if (!t.refused) await evaluateRates(ctx, writeTurn);
        return reportOf(u.read, rows, { rowCount: done, matched, alreadyRecorded, changes: t.changes }, false);
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
  await tx.deps.stores.uploads.recordUpload(tx, { id: u.id, lenderId: tx.lender.id, recordedAt: u.now, creator: u.creator, report });
  if (stored) await tx.deps.stores.uploads.endUnfinished(tx, u.id);
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
  for (const id of await deps.stores.uploads.unfinishedIds({ deps }, RESUMED_AT_ONCE)) {
    if (recordingHere.has(id)) continue;
    const lease = await leaseOf(deps, id);
    if (!lease) continue;
    try {
      const found = await deps.stores.uploads.unfinishedOf({ deps }, id);
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
      const u: Recording = { id, creator: stored.creator, now: stored.checkedAt, read, done: stored.done, matched: stored.matched, alreadyRecorded: stored.alreadyRecorded };
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
