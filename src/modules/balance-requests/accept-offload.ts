import type { Deps } from '../../deps';
import { Unavailable } from '../../platform/errors';
import { bytesToPost, oncePerDatabase, revivedError, type PostedError } from '../../platform/thread';
import { prepareBalanceRequest, type PreparedRequest } from './prepare';

// Accepting a balance request of up to 1000 authorizers is a few milliseconds of CPU (JSON, schema, rules,
// sealing). A large body is prepared in the accept worker, a thread of its own started at the first one, so
// the event loop only reads the body and writes the batch: under a stream of such requests the main thread
// keeps serving, and the two cores share the work. A small body is prepared here: the trip to the worker
// would cost more than the work.

/** Bodies under this many bytes (about 150 authorizers) are prepared on the event loop. */
export const INLINE_BYTES = 32 * 1024;

type FromWorker = { type: 'done'; id: number; prepared: PreparedRequest } | { type: 'failed'; id: number; error: PostedError };

interface Job {
  resolve: (p: PreparedRequest) => void;
  reject: (e: unknown) => void;
}

export class AcceptWorker {
  private worker: Worker | null = null;
  private next = 1;
  private readonly jobs = new Map<number, Job>();
  private closed = false;

  constructor(private readonly deps: Pick<Deps, 'vault'>) {}

  prepare(bytes: Uint8Array, opts: { debitCardsApproved: boolean; now: number }): Promise<PreparedRequest> {
    if (this.closed) return Promise.reject(new Unavailable('The service is stopping; send the request again once it is back'));
    const worker = this.start();
    const id = this.next++;
    return new Promise<PreparedRequest>((resolve, reject) => {
      this.jobs.set(id, { resolve, reject });
      // The body's own buffer is handed over (the route has no other use for it).
      const sent = bytesToPost(bytes, true);
      worker.postMessage({ type: 'prepare', id, bytes: sent, ...opts }, [sent.buffer as ArrayBuffer]);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./accept-worker.ts', import.meta.url).href);
    w.postMessage({ type: 'init', key: this.deps.vault.sealingKey() });
    w.onmessage = (event: MessageEvent<FromWorker>) => {
      const m = event.data;
      const job = this.jobs.get(m.id);
      if (!job) return;
      this.jobs.delete(m.id);
      if (m.type === 'done') job.resolve(m.prepared);
      else job.reject(revivedError(m.error));
    };
    w.onerror = (event) => this.fail(new Error(`the accept worker failed: ${event.message}`));
    w.addEventListener('close', () => {
      if (this.worker === w) this.worker = null;
      this.fail(new Unavailable('The request was cut off before it was accepted; nothing of it was recorded. Send it again'));
    });
    w.unref();
    this.worker = w;
    return w;
  }

  private fail(e: Error): void {
    const jobs = [...this.jobs.values()];
    this.jobs.clear();
    for (const job of jobs) job.reject(e);
  }

  /** Ends the worker: a request it was preparing is answered 503, and nothing of it was recorded. */
  close(): void {
    this.closed = true;
    const w = this.worker;
    this.worker = null;
    this.fail(new Unavailable('The service is stopping; nothing of the request was recorded. Send it again once it is back'));
    w?.terminate();
  }
}

const workers = new WeakMap<object, AcceptWorker>();

/** The accept worker of these deps (started at its first request, ended with the database handle). */
export function acceptWorkerOf(deps: Deps): AcceptWorker {
  return oncePerDatabase(workers, deps, () => new AcceptWorker(deps));
}

/** A balance request's body prepared: here when it is small, in the accept worker when it is not. */
export async function prepareOffLoop(deps: Deps, bytes: Uint8Array, opts: { debitCardsApproved: boolean; now: number }): Promise<PreparedRequest> {
  if (bytes.byteLength < INLINE_BYTES) return prepareBalanceRequest(bytes, { ...opts, seal: (b) => deps.vault.sealBytes(b) });
  return acceptWorkerOf(deps).prepare(bytes, opts);
}
