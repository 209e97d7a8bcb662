import { readFileSync } from 'node:fs';

// A burst of large request bodies from one key, as a hostile or careless client sends them: many balance CSVs
// at once, each streamed as fast as the connection takes it, with a /healthz poller beside them and the
// server's peak memory read from /proc. Used by the test of large bodies in flight
// (tests/e2e/body-admission.test.ts) and by `bun run bench bodies`.

export const BURST_BOUNDARY = 'burst-boundary-7f3a';

/**
 * A balance CSV of `rows` rows of about 930 bytes each (a long meta_note: 5000 rows are 4.6 MB), as the bytes
 * of a multipart body with its part `file`, and that body's content type.
 */
export function largeCsvBody(rows: number, tag: string): { body: Uint8Array; contentType: string } {
  const note = 'n'.repeat(880);
  const lines = ['authorizer_unique_id,ssn,account_number,routing_number,meta_note'];
  for (let i = 0; i < rows; i++) lines.push(`${tag}-${i},123456789,0001234567,110000000,${note}`);
  const csv = lines.join('\r\n') + '\r\n';
  const text =
    `--${BURST_BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="burst.csv"\r\nContent-Type: text/csv\r\n\r\n` +
    `${csv}\r\n--${BURST_BOUNDARY}--\r\n`;
  return { body: new TextEncoder().encode(text), contentType: `multipart/form-data; boundary=${BURST_BOUNDARY}` };
}

export interface BurstAnswer {
  status: number;
  retryAfter: string | null;
  /** The body's bytes the client had handed to the connection when the answer came. */
  sentAtAnswer: number;
}

/**
 * `n` POSTs of `body` to `url` at once, each body a stream of 64 KB chunks with its length declared. A
 * request whose connection fails counts as status 0.
 */
export async function burst(url: string, key: string, body: Uint8Array, contentType: string, n: number): Promise<BurstAnswer[]> {
  const CHUNK = 64 * 1024;
  return Promise.all(
    Array.from({ length: n }, async () => {
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent >= body.byteLength) return c.close();
          const next = body.subarray(sent, sent + CHUNK);
          sent += next.byteLength;
          c.enqueue(next);
        },
      });
      try {
        const res = await fetch(url, {
          method: 'POST',
          body: stream,
          headers: { authorization: `Bearer ${key}`, 'content-type': contentType, 'content-length': String(body.byteLength) },
          duplex: 'half',
        } as RequestInit);
        const sentAtAnswer = sent;
        await res.arrayBuffer();
        return { status: res.status, retryAfter: res.headers.get('retry-after'), sentAtAnswer };
      } catch {
        return { status: 0, retryAfter: null, sentAtAnswer: sent };
      }
    }),
  );
}

export interface Poller {
  /** Stops polling; every answer's start and end (epoch ms) and status, and the requests that failed. */
  stop(): Promise<{ answers: { start: number; end: number; status: number }[]; failed: number }>;
}

/** GET `url` again and again, one at a time, until stopped. */
export function poll(url: string): Poller {
  let stopped = false;
  const answers: { start: number; end: number; status: number }[] = [];
  let failed = 0;
  const loop = (async () => {
    while (!stopped) {
      const start = Date.now();
      try {
        const res = await fetch(url);
        await res.arrayBuffer();
        answers.push({ start, end: Date.now(), status: res.status });
      } catch {
        failed++;
      }
      // A turn of the event loop between requests, so the poller does not starve the burst beside it.
      await Bun.sleep(1);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { answers, failed };
    },
  };
}

/** The longest time between two answers' ends, counting from `from` to `to` (epoch ms) at the edges. */
export function longestGap(ends: number[], from: number, to: number): number {
  const inside = [from, ...ends.filter((e) => e > from && e < to).sort((a, b) => a - b), to];
  let gap = 0;
  for (let i = 1; i < inside.length; i++) gap = Math.max(gap, inside[i]! - inside[i - 1]!);
  return gap;
}

/** A process's peak resident memory so far (VmHWM), in bytes; 0 when it cannot be read. */
export function peakRss(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
