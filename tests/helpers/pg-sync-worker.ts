// The thread behind tests/helpers/pg-sync.ts: runs each statement it is sent on a connection of its own per
// database, and puts the answer (text) in the shared buffer, then wakes the waiting thread.
import { SQL } from 'bun';

declare const self: Worker;

let header: Int32Array | null = null;
let body: Uint8Array | null = null;
const connections = new Map<string, SQL>();
const encoder = new TextEncoder();

/**
 * Header words: the status (1 rows as JSON, 2 too large for the buffer, 3 an error with its message), the text's
 * length, and the sequence number of the statement answered, stored last.
 */
function answer(seq: number, status: number, text: string): void {
  let bytes = encoder.encode(text);
  if (bytes.length > body!.length) {
    if (status === 1) status = 2;
    bytes = bytes.subarray(0, Math.min(bytes.length, 4096));
  }
  body!.set(bytes);
  Atomics.store(header!, 1, bytes.length);
  Atomics.store(header!, 0, status);
  Atomics.store(header!, 2, seq);
  Atomics.notify(header!, 2);
}

self.onmessage = async (event: MessageEvent<{ type: 'init'; shared: SharedArrayBuffer } | { type: 'query'; url: string; query: string; seq: number }>) => {
  const m = event.data;
  if (m.type === 'init') {
    header = new Int32Array(m.shared, 0, 3);
    body = new Uint8Array(m.shared, 12);
    return;
  }
  try {
    let sql = connections.get(m.url);
    if (!sql) connections.set(m.url, (sql = new SQL(m.url, { max: 1, idleTimeout: 30 })));
    const [row] = (await sql.unsafe(m.query)) as { j: unknown }[];
    const j = row?.j ?? '[]';
    answer(m.seq, 1, typeof j === 'string' ? j : JSON.stringify(j));
  } catch (e) {
    // A database dropped under its connection: the next statement for it connects again.
    const sql = connections.get(m.url);
    connections.delete(m.url);
    void sql?.close().catch(() => undefined);
    answer(m.seq, 3, e instanceof Error ? e.message : String(e));
  }
};
