// The fake Plaid server in a process of its own for the budgets benchmark: `items` Items of one account each,
// every Item limited to 5 balance calls per `windowMs`, its window spent by the lender's own application when the
// service first asks about it, and its balance answers taking a time drawn per Item between 0 and `maxLatencyMs`.
// It prints its URL, then answers "stats" on stdin with what it saw.
import { startFakePlaid } from '../../tests/fakes/plaid-server';

const [items, maxLatencyMs, windowMs] = process.argv.slice(2).map(Number);
const plaid = startFakePlaid();
plaid.addClient('bench_client', 'bench-secret');
plaid.setItemRateLimit(5, windowMs!);
// Whenever the service first asks about an Item, the lender's own application has just spent its minute.
plaid.spendBeforeFirstCall(5);
for (let i = 0; i < items!; i++) {
  const token = `access-sandbox-budget${i}`;
  plaid.addItem(token, [{ account_id: 'acc_bench', available: 100 + i, current: 200 + i }]);
  // Each Item's institution answers its balance calls in its own time, 0 to the most; other calls at once.
  plaid.setItemLatency(token, Math.random() * maxLatencyMs!);
}
console.log(plaid.url);

for await (const line of console) {
  if (line.trim() !== 'stats') continue;
  const reads = plaid.requests.filter((q) => q.path === '/accounts/balance/get');
  let refusedItems = 0;
  let afterFirst = 0;
  for (let i = 0; i < items!; i++) {
    const r = plaid.rateRefusals(`access-sandbox-budget${i}`);
    if (r > 0) refusedItems++;
    if (r > 1) afterFirst += r - 1;
  }
  console.log(JSON.stringify({ reads: reads.length, ok: reads.filter((q) => q.status === 200).length, refusedItems, afterFirst, max: plaid.inFlight('bench_client').max }));
}
