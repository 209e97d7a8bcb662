// The TCP proxy of tests/helpers/tcp-proxy.ts, in a process of its own: a test's synchronous psql calls block
// the test's event loop, which must not stop the proxy passing bytes. Argument: the target host:port. Prints
// `port N` once listening; reads `cut` and `restore` lines on stdin, answering each with `ok`.
import type { Socket } from 'bun';

const [hostname, portText] = process.argv[2]!.split(':');
const target = { hostname: hostname!, port: Number(portText) };
let open = true;
interface Pair {
  client: Socket<{ pair: Pair }>;
  upstream: Socket<unknown> | null;
  pending: Uint8Array[];
}
const pairs = new Set<Pair>();

const listener = Bun.listen<{ pair: Pair }>({
  hostname: '127.0.0.1',
  port: 0,
  socket: {
    async open(client) {
      if (!open) return void client.terminate();
      const pair: Pair = { client, upstream: null, pending: [] };
      client.data = { pair };
      pairs.add(pair);
      try {
        const upstream = await Bun.connect({
          hostname: target.hostname,
          port: target.port,
          socket: {
            data: (_s, chunk) => void pair.client.write(chunk),
            close: () => void pair.client.end(),
            error: () => void pair.client.end(),
          },
        });
        pair.upstream = upstream;
        for (const chunk of pair.pending) upstream.write(chunk);
        pair.pending = [];
      } catch {
        client.terminate();
      }
    },
    data(client, chunk) {
      const pair = client.data.pair;
      if (pair.upstream) pair.upstream.write(chunk);
      else pair.pending.push(new Uint8Array(chunk));
    },
    close(client) {
      client.data?.pair.upstream?.end();
      if (client.data) pairs.delete(client.data.pair);
    },
    error(client) {
      client.data?.pair.upstream?.end();
    },
  },
});
console.log(`port ${listener.port}`);

for await (const line of console) {
  if (line === 'cut') {
    open = false;
    for (const p of pairs) {
      p.upstream?.terminate();
      p.client.terminate();
    }
    pairs.clear();
  } else if (line === 'restore') open = true;
  console.log('ok');
}
