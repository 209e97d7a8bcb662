// A test's synchronous reads of a PostgreSQL database (PsqlDatabase's query().get/all), on a connection kept by
// a thread of their own rather than a psql process each: a psql process costs some 70 ms of CPU, and a crash
// test that polls the database every 25 ms kept about one of the machine's two cores busy with them. The
// caller's thread waits on a shared buffer (Atomics.wait) while the thread runs the statement. Each statement
// carries a sequence number that its answer repeats: a wake-up is not an answer (the thread's notify for one
// answer can land in the wait for the next), and an answer that comes after its caller gave up is not the next
// statement's.

const CAPACITY = 16 << 20;
let channel: { worker: Worker; header: Int32Array; body: Uint8Array } | null = null;
let sequence = 0;
const decoder = new TextDecoder();

function open() {
  if (channel) return channel;
  const shared = new SharedArrayBuffer(12 + CAPACITY);
  const worker = new Worker(new URL('./pg-sync-worker.ts', import.meta.url).href);
  worker.unref();
  worker.postMessage({ type: 'init', shared });
  return (channel = { worker, header: new Int32Array(shared, 0, 3), body: new Uint8Array(shared, 12) });
}

/**
 * The text of `query`'s one column `j` (the rows as JSON), run on `url`'s database; null when the answer is
 * larger than the shared buffer (the caller asks psql then). A statement that fails throws its message.
 */
export function jsonOf(url: string, query: string): string | null {
  const c = open();
  const seq = (sequence = (sequence % 0x7fffffff) + 1);
  c.worker.postMessage({ type: 'query', url, query, seq });
  const deadline = Date.now() + 120_000;
  for (let answered = Atomics.load(c.header, 2); answered !== seq; answered = Atomics.load(c.header, 2)) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`no answer in 120 s to ${query.slice(0, 80)}`);
    Atomics.wait(c.header, 2, answered, left);
  }
  const status = Atomics.load(c.header, 0);
  const text = decoder.decode(c.body.slice(0, Atomics.load(c.header, 1)));
  if (status === 1) return text;
  if (status === 2) return null;
  throw new Error(`${query.slice(0, 80)}: ${text}`);
}
