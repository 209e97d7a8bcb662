// The upload worker's thread (offload.ts starts it): its own SQLite connection to the service's file, and
// the same upload code as the main thread, given a clock fixed at the request's time, its own metrics (sent
// back with each report), a logger whose lines go back to the main thread's, a vault holding the current key
// (an upload of several transactions stores its file sealed, and a resumed one opens it), and the main
// thread's write gate's waiting flag (on SQLite an upload commits as soon as other writes wait; on PostgreSQL
// it takes no gate).
import type { Config } from '../../config';
import type { Deps } from '../../deps';
import { systemClock } from '../../platform/clock';
import type { Lender } from '../../platform/context';
import { absent, openThreadPlatform, postedError } from '../../platform/thread';
import { Vault } from '../../platform/vault';
import { pgStores, sqliteStores } from '../../stores';
import { pgEngine, sqliteEngine } from '../../engine-services';
import { answerOf, processUpload } from './service';
import { budgetOf } from './read';
import { resumeUnfinished, type WriteTurn } from './recording';
import type { UploadForm } from './types';

declare const self: Worker;

type ToWorker =
  | { type: 'init'; config: Config; key: Uint8Array; waiting: Int32Array }
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
  | { type: 'resume'; id: number }
  | { type: 'granted'; id: number }
  | { type: 'cancel'; id: number };

let base: Omit<Deps, 'clock'> | null = null;
/** The main thread's write gate's waiting flag: 1 while other writes wait for the lock. */
let waiting: Int32Array | null = null;
/**
 * Whether other writes wait for the lock, read after each slice: a transaction of an upload goes on while
 * none does. On PostgreSQL, which has no lock to share, a transaction records one slice (undefined: the
 * upload's default), and holds its rows' locks no longer.
 */
const othersWaitOf = (): (() => boolean) | undefined => (base!.engine.oneWriter ? () => Atomics.load(waiting!, 0) !== 0 : undefined);
const grants = new Map<number, () => void>();
/** Uploads whose first slice is recorded: they go on to their end, their caller gone or not. */
const recording = new Set<number>();

self.onmessage = (event: MessageEvent<ToWorker>) => {
  const m = event.data;
  if (m.type === 'init') {
    waiting = m.waiting;
    const platform = openThreadPlatform(m.config, (line) => self.postMessage({ type: 'log', line }));
    const vault = new Vault(Buffer.from(m.key));
    // This thread's composition: the engine chosen once, as the main thread's runtime does.
    base = {
      ...platform,
      stores: platform.pg ? pgStores : sqliteStores,
      engine: platform.pg ? pgEngine(platform, vault, platform.logger) : sqliteEngine(platform),
      vault,
      bank: absent('bank'),
      linked: absent('linked'),
      routing: absent('routing'),
      processors: absent('processors'),
      balanceResults: absent('balanceResults'),
      enrollmentChanges: absent('enrollmentChanges'),
      providerCalls: absent('providerCalls'),
      portal: absent('portal'),
    };
    return;
  }
  if (m.type === 'granted' || m.type === 'cancel') {
    // A cancelled upload waiting for the lock goes on at once, to find the flag set and stop before its first
    // slice; one already recording waits for its turn as before.
    if (m.type === 'cancel' && recording.has(m.id)) return;
    grants.get(m.id)?.();
    grants.delete(m.id);
    return;
  }
  if (m.type === 'resume') return void resume(m.id);
  void upload(m);
};

/**
 * Each of the job's transactions runs once the main thread holds the write gate for it, and lets go after. On
 * PostgreSQL at once: its transactions write side by side with the main thread's, as several replicas' do
 * (what must take turns takes a lock: the lender's upload lock, the return-rate watch's), so the upload never
 * makes another request's writes wait.
 */
const writeTurnOf =
  (id: number): WriteTurn =>
  async (fn) => {
    if (base!.pg) return fn();
    await new Promise<void>((resolve) => {
      grants.set(id, resolve);
      self.postMessage({ type: 'lock', id });
    });
    try {
      return await fn();
    } finally {
      self.postMessage({ type: 'unlock', id });
    }
  };

async function upload(m: Extract<ToWorker, { type: 'upload' }>): Promise<void> {
  const deps: Deps = { ...base!, clock: { now: () => m.now } };
  try {
    const report = await processUpload({
      ctx: { lender: m.lender, deps },
      input: { bytes: m.bytes, multipart: m.multipart ?? undefined, dryRun: m.dryRun, creator: m.creator },
      // The budget runs from when the worker takes the upload, not from when it was sent.
      budget: budgetOf(base!.config, () => Atomics.load(m.cancelled, 0) === 1),
      writeTurn: writeTurnOf(m.id),
      othersWait: othersWaitOf(),
      onRecording: () => {
        recording.add(m.id);
        self.postMessage({ type: 'recording', id: m.id });
      },
    });
    const metrics = await deps.metrics.registry.getMetricsAsJSON();
    deps.metrics.registry.resetMetrics();
    const answer = answerOf(report, m.form);
    // The JSON's buffer is handed over, not copied.
    self.postMessage({ type: 'done', id: m.id, answer, metrics }, answer.form === 'json' ? answer.json.map((part) => part.buffer as ArrayBuffer) : []);
  } catch (e) {
    self.postMessage({ type: 'failed', id: m.id, error: postedError(e) });
  } finally {
    recording.delete(m.id);
  }
}

/** Finishes the uploads left unfinished, each against the time stored with it. */
async function resume(id: number): Promise<void> {
  try {
    const deps: Deps = { ...base!, clock: systemClock };
    const finished = await resumeUnfinished(deps, writeTurnOf(id), othersWaitOf());
    const metrics = await deps.metrics.registry.getMetricsAsJSON();
    deps.metrics.registry.resetMetrics();
    self.postMessage({ type: 'resumed', id, finished, metrics });
  } catch (e) {
    self.postMessage({ type: 'failed', id, error: postedError(e) });
  }
}
