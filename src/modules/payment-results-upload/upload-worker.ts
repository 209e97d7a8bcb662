// The upload worker's thread (offload.ts starts it): its own SQLite connection to the service's file, and
// the same upload code as the main thread, given a clock fixed at the request's time, its own metrics (sent
// back with each report) and a logger whose lines go back to the main thread's.
import type { Config } from '../../config';
import type { Deps } from '../../deps';
import type { Lender } from '../../platform/context';
import { absent, openThreadPlatform, postedError } from '../../platform/thread';
import { answerOf, budgetOf, processUpload } from './service';
import type { UploadForm } from './types';

declare const self: Worker;

type ToWorker =
  | { type: 'init'; config: Config }
  | {
      type: 'upload';
      id: number;
      lender: Lender;
      now: number;
      dryRun: boolean;
      creator: string | null;
      multipart: string | null;
      form: UploadForm;
      bytes: Uint8Array;
      /** Shared with the main thread: 1 once the upload's caller has gone. */
      cancelled: Int32Array;
    }
  | { type: 'granted'; id: number }
  | { type: 'cancel'; id: number };

let base: Omit<Deps, 'clock'> | null = null;
const grants = new Map<number, () => void>();

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type === 'init') {
    base = {
      ...openThreadPlatform(m.config, (line) => self.postMessage({ type: 'log', line })),
      bank: absent('bank'),
      linked: absent('linked'),
      routing: absent('routing'),
      processors: absent('processors'),
      balanceResults: absent('balanceResults'),
      providerCalls: absent('providerCalls'),
    };
    return;
  }
  if (m.type === 'granted' || m.type === 'cancel') {
    // A cancelled upload waiting for the lock goes on at once, to find the flag set and stop before its transaction.
    grants.get(m.id)?.();
    grants.delete(m.id);
    return;
  }
  void upload(m);
};

async function upload(m: Extract<ToWorker, { type: 'upload' }>): Promise<void> {
  const deps: Deps = { ...base!, clock: { now: () => m.now } };
  try {
    const report = await processUpload({
      ctx: { lender: m.lender, deps },
      input: { bytes: m.bytes, multipart: m.multipart ?? undefined, dryRun: m.dryRun, creator: m.creator },
      // The budget runs from when the worker takes the upload, not from when it was sent.
      budget: budgetOf(base!.config, () => Atomics.load(m.cancelled, 0) === 1),
      // The recorded transaction runs once the main thread holds the write gate for it, and lets go after.
      writeTurn: async (fn) => {
        await new Promise<void>((resolve) => {
          grants.set(m.id, resolve);
          self.postMessage({ type: 'lock', id: m.id });
        });
        try {
          return await fn();
        } finally {
          self.postMessage({ type: 'unlock', id: m.id });
        }
      },
    });
    const metrics = await deps.metrics.registry.getMetricsAsJSON();
    deps.metrics.registry.resetMetrics();
    const answer = answerOf(report, m.form);
    // The JSON's buffer is handed over, not copied.
    self.postMessage({ type: 'done', id: m.id, answer, metrics }, answer.form === 'json' ? answer.json.map((part) => part.buffer as ArrayBuffer) : []);
  } catch (e) {
    self.postMessage({ type: 'failed', id: m.id, error: postedError(e) });
  }
}
