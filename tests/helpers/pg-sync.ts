// A test's synchronous reads of a PostgreSQL database (PsqlDatabase's query().get/all), on a connection kept by
// a thread of their own rather than a psql process each: a psql process costs some 70 ms of CPU, and a crash
// test that polls the database every 25 ms kept about one of the machine's two cores busy with them. The
// caller's thread waits on a shared buffer (Atomics.wait) while the thread runs the statement.

const CAPACITY = 16 << 20;
let channel: { worker: Worker; header: Int32Array; body: Uint8Array } | null = null;
const decoder = new TextDecoder();

function open() {
  if (channel) return channel;
  const shared = new SharedArrayBuffer(8 + CAPACITY);
  const worker = new Worker(new URL('./pg-sync-worker.ts', import.meta.url).href);
  worker.unref();
  worker.postMessage({ type: 'init', shared });
  return (channel = { worker, header: new Int32Array(shared, 0, 2), body: new Uint8Array(shared, 8) });
}

/**
 * The text of `query`'s one column `j` (the rows as JSON), run on `url`'s database; null when the answer is
 * larger than the shared buffer (the caller asks psql then). A statement that fails throws its message.
 */
export function jsonOf(url: string, query: string): string | null {
  const c = open();
  Atomics.store(c.header, 0, 0);
  c.worker.postMessage({ type: 'query', url, query });
  if (Atomics.wait(c.header, 0, 0, 120_000) === 'timed-out') throw new Error(`no answer in 120 s to ${query.slice(0, 80)}`);
  const status = Atomics.load(c.header, 0);
  const text = decoder.decode(c.body.slice(0, Atomics.load(c.header, 1)));
  if (status === 1) return text;
  if (status === 2) return null;
  throw new Error(`${query.slice(0, 80)}: ${text}`);
}
