import type { Ctx, Deps } from '../../deps';
import * as domainErrors from '../../platform/errors';
import { writeGate } from '../../platform/context';
import { bytesToPost, oncePerDatabase, revivedError, type PostedError } from '../../platform/thread';
import type { UploadAnswer, UploadForm, UploadInput } from './types';

// The upload worker, as the main thread sees it: one Bun Worker per database, started at the first upload,
// with its own SQLite connection to the same file. It works on one upload at a time, given the file's bytes
// (transferred, not copied; a multipart body is parsed there too). It reads, checks and decides in its own
// thread, asks for the write gate only for its transactions (SQLite), and answers with the report, the
// metrics it counted and what it logged. The main thread only waits: its event loop keeps serving, and its
// other writes wait at the gate, asynchronously, for a slice of the upload at most.
//
// Uploads waiting for the worker are kept per lender, at most UPLOAD_WAITING_PER_LENDER each (a 429 past it),
// and the next one is taken from the lender served longest ago: one lender's files never hold up another's
// behind them. An upload whose request ends (the client hung up) leaves the queue, or, if it is running, is
// stopped by the worker at its next check (a flag in shared memory, read between slices of rows and before
// its first slice is recorded): nothing of it is recorded. Once its first slice is recorded (the worker says
// so), it is recorded to its end whatever its caller does.
//
// On SQLite an upload is recorded in transactions of one or more slices, for each of which the worker asks
// the write gate and lets go after; it reads the gate's waiting flag (shared memory) after each slice and
// commits as soon as anything waits, so the writes of other requests go between two slices. On PostgreSQL it
// takes no gate: a transaction of one slice each, side by side with the main thread's. Stopping the service
// terminates the worker: the transaction it had open is never committed (it is rolled back), and an
// upload cut off between two of its transactions is finished by the next start (resume, run by the
// upload-resume job).

type Metrics = Parameters<Deps['metrics']['merge']>[0];
type FromWorker =
  | { type: 'lock'; id: number }
  | { type: 'unlock'; id: number }
  | { type: 'log'; line: string }
  | { type: 'recording'; id: number }
  | { type: 'done'; id: number; answer: UploadAnswer; metrics: Metrics }
  | { type: 'resumed'; id: number; finished: number; metrics: Metrics }
  | { type: 'failed'; id: number; error: PostedError };

/** Seconds a lender is told to wait when it already has its share of uploads waiting. */
export const UPLOAD_RETRY_AFTER_SECONDS = 10;

/** The queue key of the worker's own work: finishing the uploads left unfinished. */
const RESUMING = '';

interface Job {
  id: number;
  lenderId: string;
  send: () => void;
  /** An upload's answer, or how many unfinished uploads a resume finished. */
  resolve: (r: UploadAnswer | number) => void;
  reject: (e: unknown) => void;
  /** 1 once the caller has gone: read by the worker between slices of its work. */
  cancelled: Int32Array;
  state: 'waiting' | 'running' | 'ended';
  /** Releases the write gate the worker holds for this upload's transaction. */
  unlock?: () => void;
  /** The worker let go of the lock before the gate granted it (the upload was stopped while it waited). */
  unlocked?: boolean;
  /** Its first slice is recorded: it goes on to its end, and what stops it now is finished by a resume. */
  recording?: boolean;
  forget?: () => void;
}

const cancelledError = () => new domainErrors.Unavailable('The upload was cancelled: its request ended before the answer; nothing of it was recorded');
/** An upload cut off after its first slice: the rest is recorded when the service resumes it. */
const partlyRecorded = (what: string) =>
  new domainErrors.Unavailable(`${what}; part of the upload was recorded, and the service finishes it when it is back (it is then in the upload history), so it need not be sent again`);

export class UploadWorker {
  private worker: Worker | null = null;
  private next = 1;
  private readonly jobs = new Map<number, Job>();
  /** Uploads waiting for the worker, per lender, in arrival order. */
  private readonly waiting = new Map<string, Job[]>();
  /** When each lender was last given the worker (a count of turns): the next turn goes to the lender served longest ago. */
  private readonly lastServed = new Map<string, number>();
  private turns = 0;
  private current: Job | null = null;
  private closed = false;

  constructor(private readonly deps: Deps) {}

  /** Uploads of this lender waiting for the worker (not the one it runs). */
  waitingOf(lenderId: string): number {
    return this.waiting.get(lenderId)?.length ?? 0;
  }

  /** Whether the worker has an upload in hand. */
  get busy(): boolean {
    return this.current !== null;
  }

  /** How many uploads in hand have their first slice recorded (and go on to their end whatever stops them). */
  get recording(): number {
    let n = 0;
    for (const job of this.jobs.values()) if (job.recording) n++;
    return n;
  }

  /**
   * Throws the 429 of a lender that has its share of uploads waiting while the worker runs another: checked
   * before a body is read (the route's admission), and again when the upload is queued.
   */
  refuseWhenFull(lenderId: string): void {
    const max = this.deps.config.uploadWaitingPerLender;
    if (this.current !== null && this.waitingOf(lenderId) >= max) {
      throw new domainErrors.RateLimited(
        UPLOAD_RETRY_AFTER_SECONDS,
        `${max} of your uploads are already waiting for their turn (UPLOAD_WAITING_PER_LENDER); send this one again once one of them is answered`,
      );
    }
  }

  run(ctx: Ctx, input: UploadInput, form: UploadForm, signal?: AbortSignal): Promise<UploadAnswer> {
    if (this.closed) return Promise.reject(new domainErrors.Unavailable('The service is stopping; upload the file again once it is back'));
    if (signal?.aborted) return Promise.reject(cancelledError());
    const lenderId = ctx.lender.id;
    const queue = this.waiting.get(lenderId) ?? [];
    try {
      this.refuseWhenFull(lenderId);
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise<UploadAnswer>((resolve, reject) => {
      const id = this.next++;
      const job: Job = {
        id,
        lenderId,
        resolve: resolve as (r: UploadAnswer | number) => void,
        reject,
        cancelled: new Int32Array(new SharedArrayBuffer(4)),
        state: 'waiting',
        send: () => this.send(job, ctx, input, form),
      };
      // Handed over when the caller gives them up (the route: a buffer of their own); else a copy the worker
      // owns (the portal keeps a checked file to record it later). Taken now: the caller may reuse its own.
      const bytes = bytesToPost(input.bytes, input.handOver === true);
      input = { ...input, bytes };
      if (signal) {
        const onAbort = () => this.cancel(job);
        signal.addEventListener('abort', onAbort, { once: true });
        job.forget = () => signal.removeEventListener('abort', onAbort);
      }
      this.jobs.set(id, job);
      queue.push(job);
      this.waiting.set(lenderId, queue);
      this.pump();
    });
  }

  /**
   * Finishes, in the worker, the uploads left unfinished (service.ts resumeUnfinished), when it has nothing
   * else to do: how many it finished (0 when it is busy; the next call tries again). Uploads sent meanwhile
   * wait for it as for any upload.
   */
  resume(): Promise<number> {
    if (this.closed || this.current !== null || this.waiting.size > 0) return Promise.resolve(0);
    return new Promise<number>((resolve, reject) => {
      const id = this.next++;
      const job: Job = {
        id,
        lenderId: RESUMING,
        resolve: resolve as (r: UploadAnswer | number) => void,
        reject,
        cancelled: new Int32Array(new SharedArrayBuffer(4)),
        state: 'waiting',
        send: () => this.start().postMessage({ type: 'resume', id }),
      };
      this.jobs.set(id, job);
      this.waiting.set(RESUMING, [job]);
      this.pump();
    });
  }

  /** Gives the worker, when free, the first upload of the waiting lender served longest ago. */
  private pump(): void {
    if (this.current !== null || this.closed) return;
    let pick: Job[] | null = null;
    let pickServed = Infinity;
    for (const [lenderId, queue] of this.waiting) {
      const served = this.lastServed.get(lenderId) ?? -1;
      // Ties (lenders never served) go to the one whose upload came first: the map keeps arrival order.
      if (served < pickServed) {
        pick = queue;
        pickServed = served;
      }
    }
    if (!pick) return;
    const job = pick.shift()!;
    if (pick.length === 0) this.waiting.delete(job.lenderId);
    this.lastServed.set(job.lenderId, ++this.turns);
    job.state = 'running';
    this.current = job;
    job.send();
  }

  /** The caller has gone: a waiting upload leaves its queue; a running one is stopped by the worker. */
  private cancel(job: Job): void {
    if (job.state === 'waiting') {
      const queue = this.waiting.get(job.lenderId);
      const at = queue?.indexOf(job) ?? -1;
      if (queue && at >= 0) queue.splice(at, 1);
      if (queue?.length === 0) this.waiting.delete(job.lenderId);
      this.end(job);
      job.reject(cancelledError());
      return;
    }
    if (job.state !== 'running' || job.recording) return;
    Atomics.store(job.cancelled, 0, 1);
    // A worker waiting for the write lock is not reading the flag: it is told as well.
    this.worker?.postMessage({ type: 'cancel', id: job.id });
  }

  private send(job: Job, ctx: Ctx, input: UploadInput, form: UploadForm): void {
    const worker = this.start();
    const bytes = input.bytes;
    worker.postMessage(
      {
        type: 'upload',
        id: job.id,
        lender: ctx.lender,
        now: this.deps.clock.now(),
        dryRun: input.dryRun,
        creator: input.creator ?? null,
        multipart: input.multipart ?? null,
        form,
        bytes,
        cancelled: job.cancelled,
      },
      [bytes.buffer as ArrayBuffer],
    );
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./upload-worker.ts', import.meta.url).href);
    w.postMessage({ type: 'init', config: this.deps.config, key: this.deps.vault.sealingKey(), waiting: writeGate(this.deps).waitingFlag });
    w.onmessage = (event: MessageEvent<FromWorker>) => this.receive(event.data);
    w.onerror = (event) => this.fail(`The upload worker failed: ${event.message}`);
    w.addEventListener('close', () => {
      if (this.worker === w) this.worker = null;
      this.fail('The upload was cut off before it finished');
    });
    // The worker does not keep the process alive by itself.
    w.unref();
    this.worker = w;
    return w;
  }

  private receive(m: FromWorker): void {
    if (m.type === 'log') return this.relog(m.line);
    const job = this.jobs.get(m.id);
    if (!job) return;
    switch (m.type) {
      case 'lock':
        // Held from the grant until the worker says its transaction has ended (or the worker is gone, or the
        // upload ended while it waited for the grant: then it is let go at once). Each transaction asks again.
        job.unlocked = false;
        void writeGate(this.deps).exclusive(
          () =>
            new Promise<void>((release) => {
              if (job.state === 'ended' || job.unlocked) return release();
              job.unlock = release;
              this.worker?.postMessage({ type: 'granted', id: m.id });
            }),
        );
        return;
      case 'unlock':
        job.unlocked = true;
        job.unlock?.();
        job.unlock = undefined;
        return;
      case 'recording':
        job.recording = true;
        return;
      case 'done':
        this.end(job);
        this.deps.metrics.merge(m.metrics);
        job.resolve(m.answer);
        return;
      case 'resumed':
        this.end(job);
        this.deps.metrics.merge(m.metrics);
        job.resolve(m.finished);
        return;
      case 'failed': {
        this.end(job);
        const error = revivedError(m.error);
        job.reject(Atomics.load(job.cancelled, 0) === 1 && !job.recording ? cancelledError() : error);
        return;
      }
    }
  }

  /** The upload is over (answered, failed or cancelled): the gate let go, and the worker given the next one. */
  private end(job: Job): void {
    const wasRunning = job.state === 'running';
    job.state = 'ended';
    job.unlock?.();
    job.unlock = undefined;
    job.forget?.();
    this.jobs.delete(job.id);
    if (wasRunning && this.current === job) {
      this.current = null;
      this.pump();
    }
  }

  /**
   * The worker is gone: the transaction it had open is lost (never committed), and its upload with it unless a
   * slice of it was recorded (a resume finishes it then); those waiting go to the next worker.
   */
  private fail(what: string): void {
    const job = this.current;
    if (!job) return;
    this.end(job);
    job.reject(job.recording ? partlyRecorded(what) : new domainErrors.Unavailable(`${what}; nothing of it was recorded`));
  }

  /** A line the worker's logger wrote, logged again here at its level (redaction ran in the worker too). */
  private relog(line: string): void {
    try {
      const { level, msg, time: _t, service: _s, ...rest } = JSON.parse(line) as Record<string, unknown>;
      const log = this.deps.logger;
      const fn = (typeof level === 'string' && level in log ? (log as unknown as Record<string, (o: object, m?: string) => void>)[level] : log.info).bind(log);
      fn({ ...rest, thread: 'upload-worker' }, typeof msg === 'string' ? msg : undefined);
    } catch {
      /* not a log line */
    }
  }

  /**
   * Ends the worker at once: the transaction it has open is rolled back, and the callers of its upload and of
   * those waiting are answered 503 (an upload partly recorded is finished at the next start).
   */
  close(): void {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    const e = new domainErrors.Unavailable('The service is stopping; nothing of the upload was recorded. Upload the file again once it is back');
    for (const job of [...this.jobs.values()]) {
      if (job.state === 'running') this.current = null;
      this.end(job);
      job.reject(job.recording ? partlyRecorded('The service is stopping') : e);
    }
    this.waiting.clear();
    w?.terminate();
  }
}

const workers = new WeakMap<object, UploadWorker>();

/** The upload worker of these deps' database, or null when the database is in memory. */
export function uploadWorkerOf(deps: Deps): UploadWorker | null {
  if (!deps.engine.opensInThreads) return null;
  return oncePerDatabase(workers, deps, () => new UploadWorker(deps));
}
