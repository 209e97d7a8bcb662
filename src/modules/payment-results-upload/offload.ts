import type { Ctx, Deps } from '../../deps';
import * as domainErrors from '../../platform/errors';
import { writeGate } from '../../platform/context';
import { bytesToPost, oncePerDatabase, revivedError, type PostedError } from '../../platform/thread';
import type { UploadAnswer, UploadForm, UploadInput } from './service';

// The upload worker, as the main thread sees it: one Bun Worker per database, started at the first upload,
// with its own SQLite connection to the same file. Uploads are sent to it one at a time with the file's bytes
// (transferred, not copied). It reads, checks and decides in its own thread, asks for the write gate only for
// the recorded transaction, and answers with the report, the metrics it counted and what it logged. The main
// thread only waits: its event loop keeps serving, and its other writes wait at the gate, asynchronously.
//
// Stopping the service terminates the worker: a transaction it had open is never committed (SQLite rolls it
// back), so an upload is recorded whole or not at all, whenever the process ends.

type FromWorker =
  | { type: 'lock'; id: number }
  | { type: 'unlock'; id: number }
  | { type: 'log'; line: string }
  | { type: 'done'; id: number; answer: UploadAnswer; metrics: Parameters<Deps['metrics']['merge']>[0] }
  | { type: 'failed'; id: number; error: PostedError };

interface Job {
  id: number;
  resolve: (r: UploadAnswer) => void;
  reject: (e: unknown) => void;
  /** Releases the write gate the worker holds for this upload's transaction. */
  unlock?: () => void;
}

export class UploadWorker {
  private worker: Worker | null = null;
  private next = 1;
  private readonly jobs = new Map<number, Job>();
  /** One upload at a time: the worker is one thread, and two recorded uploads would queue at the gate anyway. */
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(private readonly deps: Deps) {}

  run(ctx: Ctx, input: UploadInput, form: UploadForm): Promise<UploadAnswer> {
    const p = this.tail.then(() => this.send(ctx, input, form));
    this.tail = p.catch(() => undefined);
    return p;
  }

  private send(ctx: Ctx, input: UploadInput, form: UploadForm): Promise<UploadAnswer> {
    if (this.closed) return Promise.reject(new domainErrors.Unavailable('The service is stopping; upload the file again once it is back'));
    const worker = this.start();
    const id = this.next++;
    return new Promise<UploadAnswer>((resolve, reject) => {
      this.jobs.set(id, { id, resolve, reject });
      // Handed over when the caller gives them up (the route: a buffer of their own); else a copy the worker
      // owns (the portal keeps a checked file to record it later).
      const bytes = bytesToPost(input.bytes, input.handOver === true);
      worker.postMessage(
        { type: 'upload', id, lender: ctx.lender, now: this.deps.clock.now(), dryRun: input.dryRun, creator: input.creator ?? null, form, bytes },
        [bytes.buffer as ArrayBuffer],
      );
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./upload-worker.ts', import.meta.url).href);
    w.postMessage({ type: 'init', config: this.deps.config });
    w.onmessage = (event: MessageEvent<FromWorker>) => this.receive(event.data);
    w.onerror = (event) => this.fail(new Error(`the upload worker failed: ${event.message}`));
    w.addEventListener('close', () => {
      if (this.worker === w) this.worker = null;
      this.fail(new domainErrors.Unavailable('The upload was cut off before it finished; nothing of it was recorded'));
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
        // Held from the grant until the worker says its transaction has ended (or the worker is gone).
        void writeGate(this.deps).exclusive(
          () =>
            new Promise<void>((release) => {
              job.unlock = release;
              this.worker?.postMessage({ type: 'granted', id: m.id });
            }),
        );
        return;
      case 'unlock':
        job.unlock?.();
        job.unlock = undefined;
        return;
      case 'done':
        this.finish(job);
        this.deps.metrics.merge(m.metrics);
        job.resolve(m.answer);
        return;
      case 'failed':
        this.finish(job);
        job.reject(revivedError(m.error));
        return;
    }
  }

  private finish(job: Job): void {
    job.unlock?.();
    this.jobs.delete(job.id);
  }

  private fail(e: Error): void {
    for (const job of [...this.jobs.values()]) {
      this.finish(job);
      job.reject(e);
    }
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

  /** Ends the worker at once: an upload in its transaction is rolled back, and its caller answered 503. */
  close(): void {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    this.fail(new domainErrors.Unavailable('The service is stopping; nothing of the upload was recorded. Upload the file again once it is back'));
    w?.terminate();
  }
}

const workers = new WeakMap<object, UploadWorker>();

/** The upload worker of these deps' database, or null when the database is in memory. */
export function uploadWorkerOf(deps: Deps): UploadWorker | null {
  if (deps.config.databasePath === ':memory:') return null;
  return oncePerDatabase(workers, deps, () => new UploadWorker(deps));
}
