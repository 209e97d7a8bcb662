import net from 'node:net';

// A hand-written HTTP/1.1 client over a plain socket, for what fetch will not send: a body that never
// ends, a declared length with no body behind it, a slow upload.

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RawConnection {
  socket: net.Socket;
  write(data: string | Uint8Array): Promise<void>;
  /** The first response on the connection, or null if it closes or `timeoutMs` passes without one. */
  response(timeoutMs: number): Promise<RawResponse | null>;
  close(): void;
}

export async function rawConnect(port: number, host = '127.0.0.1'): Promise<RawConnection> {
  const socket = net.connect(port, host);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let received = Buffer.alloc(0);
  let closed = false;
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  socket.on('data', (d: Buffer) => {
    received = Buffer.concat([received, d]);
    wake();
  });
  socket.on('close', () => {
    closed = true;
    wake();
  });
  socket.on('error', () => {
    closed = true;
    wake();
  });
  const parse = (): RawResponse | null => {
    const end = received.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const head = received.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(head[0]!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? '0');
    const body = received.subarray(end + 4);
    if (body.length < length) return null;
    return { status, headers, body: body.subarray(0, length).toString('utf8') };
  };
  return {
    socket,
    write: (data) =>
      new Promise<void>((resolve) => {
        if (closed) return resolve();
        socket.write(data, () => resolve());
      }),
    async response(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const r = parse();
        if (r) return r;
        if (closed || Date.now() > deadline) return null;
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, Math.max(1, deadline - Date.now()));
        });
      }
    },
    close: () => socket.destroy(),
  };
}
