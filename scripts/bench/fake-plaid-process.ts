// The fake Plaid server in a process of its own, as Plaid is to the service: its answers are not made on the
// service's event loop. Started by the linked-plaid benchmark with the number of Items and the latency; it
// prints its URL, then answers "stats" on stdin with what it saw.
import { startFakePlaid } from '../../tests/fakes/plaid-server';

const [items, latency] = process.argv.slice(2).map(Number);
const plaid = startFakePlaid();
plaid.addClient('bench_client', 'bench-secret');
for (let i = 0; i < items!; i++) plaid.addItem(`access-sandbox-bench${i}`, [{ account_id: 'acc_bench', available: 100 + i, current: 200 + i }]);
plaid.setLatency(latency!);
console.log(plaid.url);

for await (const line of console) {
  if (line.trim() !== 'stats') continue;
  const reads = plaid.requests.filter((q) => q.path === '/accounts/balance/get');
  console.log(JSON.stringify({ reads: reads.length, distinct: new Set(reads.map((q) => q.body.access_token)).size, max: plaid.inFlight('bench_client').max }));
}
