import type { AuthorizerRuleOptions } from '../authorizers/rules';
import type { Deps } from '../../deps';
import { Unavailable } from '../../platform/errors';
import { bytesToPost, oncePerDatabase, revivedError, type PostedError } from '../../platform/thread';
import { prepareBalanceCsv, prepareBalanceRequest, type PreparedCsv, type PreparedRequest } from './prepare';

// Accepting a balance request of up to 1000 authorizers is a few milliseconds of CPU (JSON, schema, rules,
// sealing). A large body is prepared in an accept worker, threads of their own started as requests come, so
// the event loop only reads the body and writes the batch: under a stream of such requests the main thread
// keeps serving, and the cores share the work. A small body is prepared here: the trip to the worker
// would cost more than the work.

/** Bodies under this many bytes (about 150 authorizers) are prepared on the event loop. */
export const INLINE_BYTES = 32 * 1024;

type FromWorker = { type: 'done'; id: number; prepared: PreparedRequest | PreparedCsv } | { type: 'failed'; id: number; error: PostedError };

/**
 * Accept threads: one per core, at most four. On two cores two threads and the event loop keep both busy
 * (bun run bench accept: a third more requests a second than one thread, which waited on itself while a
 * core stood partly idle). A thread starts only when every running one has a body in hand.
 */
export const ACCEPT_THREADS = Math.max(1, Math.min(4, navigator.hardwareConcurrency || 1));

interface Job {
  thread: Thread;
  resolve: (p: PreparedRequest | PreparedCsv) => void;
  reject: (e: unknown) => void;
}

interface Thread {
  worker: Worker | null;
  /** Bodies handed to it and not yet answered. */
  busy: number;
}

/** The accept threads: each body goes to the one with the fewest bodies in hand, started at its first. */
export class AcceptWorker {
  private readonly threads: Thread[];
  private next = 1;
  private readonly jobs = new Map<number, Job>();
  private closed = false;

  constructor(
    private readonly deps: Pick<Deps, 'vault'>,
    threads = ACCEPT_THREADS,
  ) {
    this.threads = Array.from({ length: threads }, () => ({ worker: null, busy: 0 }));
  }

  /** Threads started and running. */
  get running(): number {
    return this.threads.filter((t) => t.worker !== null).length;
  }

  prepare(bytes: Uint8Array, opts: AuthorizerRuleOptions): Promise<PreparedRequest> {
    return this.run('prepare', bytes, opts) as Promise<PreparedRequest>;
  }

  /** A balance CSV file read, checked and sealed in a thread. */
  prepareCsv(bytes: Uint8Array, opts: AuthorizerRuleOptions): Promise<PreparedCsv> {
    return this.run('prepare_csv', bytes, opts) as Promise<PreparedCsv>;
  }

  private run(type: 'prepare' | 'prepare_csv', bytes: Uint8Array, opts: AuthorizerRuleOptions): Promise<PreparedRequest | PreparedCsv> {
    if (this.closed) return Promise.reject(new Unavailable('The service is stopping; send the request again once it is back'));
    // The least busy thread, a running one before one not yet started.
    const thread = this.threads.reduce((a, b) => (b.busy < a.busy || (b.busy === a.busy && b.worker && !a.worker) ? b : a));
    const worker = this.start(thread);
    const id = this.next++;
    return new Promise<PreparedRequest | PreparedCsv>((resolve, reject) => {
      this.jobs.set(id, { thread, resolve, reject });
      thread.busy++;
      // The body's own buffer is handed over (the route has no other use for it).
      const sent = bytesToPost(bytes, true);
      worker.postMessage({ type, id, bytes: sent, ...opts }, [sent.buffer as ArrayBuffer]);
    });
  }

  private start(thread: Thread): Worker {
    if (thread.worker) return thread.worker;
    const w = new Worker(new URL('./accept-worker.ts', import.meta.url).href);
    w.postMessage({ type: 'init', key: this.deps.vault.sealingKey() });
    w.onmessage = (event: MessageEvent<FromWorker>) => {
      const m = event.data;
      const job = this.take(m.id);
      if (!job) return;
      if (m.type === 'done') job.resolve(m.prepared);
      else job.reject(revivedError(m.error));
    };
    w.onerror = (event) => this.fail(thread, new Error(`the accept worker failed: ${event.message}`));
    w.addEventListener('close', () => {
      if (thread.worker === w) thread.worker = null;
      this.fail(thread, new Unavailable('The request was cut off before it was accepted; nothing of it was recorded. Send it again'));
    });
    w.unref();
    thread.worker = w;
    return w;
  }

  private take(id: number): Job | undefined {
    const job = this.jobs.get(id);
    if (!job) return undefined;
    this.jobs.delete(id);
    job.thread.busy--;
    return job;
  }

  /** Every body in hand of `thread` (of every thread, without one) is refused with `e`. */
  private fail(thread: Thread | null, e: Error): void {
    for (const [id, job] of [...this.jobs]) {
      if (thread && job.thread !== thread) continue;
      this.take(id);
      job.reject(e);
    }
  }

  /** Ends the threads: a request being prepared is answered 503, and nothing of it was recorded. */
  close(): void {
    this.closed = true;
    const running = this.threads.map((t) => t.worker);
    for (const t of this.threads) t.worker = null;
    this.fail(null, new Unavailable('The service is stopping; nothing of the request was recorded. Send it again once it is back'));
    for (const w of running) w?.terminate();
  }
}

const workers = new WeakMap<object, AcceptWorker>();

/** The accept worker of these deps (started at its first request, ended with the database handle). */
export function acceptWorkerOf(deps: Deps): AcceptWorker {
  return oncePerDatabase(workers, deps, () => new AcceptWorker(deps));
}

/** A balance request's body prepared: here when it is small, in the accept worker when it is not. */
export async function prepareOffLoop(deps: Deps, bytes: Uint8Array, opts: AuthorizerRuleOptions): Promise<PreparedRequest> {
  if (bytes.byteLength < INLINE_BYTES) return prepareBalanceRequest(bytes, { ...opts, seal: (b) => deps.vault.sealBytes(b) });
  return acceptWorkerOf(deps).prepare(bytes, opts);
}

/**
 * A balance CSV file read, checked and sealed: here when it is small, in the accept worker when it is not (a
 * 5,000-row file is a quarter of a second of CPU that would otherwise hold the event loop in slices).
 */
export async function prepareCsvOffLoop(deps: Deps, bytes: Uint8Array, opts: AuthorizerRuleOptions): Promise<PreparedCsv> {
  if (bytes.byteLength < INLINE_BYTES) return prepareBalanceCsv(bytes, { ...opts, seal: (b) => deps.vault.sealBytes(b) });
  return acceptWorkerOf(deps).prepareCsv(bytes, opts);
}
