import { join } from 'node:path';
import { writeFileSync, mkdirSync } from 'node:fs';
import { serviceEnv } from './startup';
import { authorizers, tempDir, runWrk } from './common';
const dir = tempDir('prof');
mkdirSync('/tmp/w/prof', { recursive: true });
const proc = Bun.spawn([process.execPath, ...(process.env.PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/w/prof'] : []), 'run', join(import.meta.dir, 'server.ts')], {
  cwd: join(import.meta.dir, '../..'),
  env: serviceEnv(dir, { PORT: '0', LOG_LEVEL: 'info', RATE_LIMIT_PER_SECOND: '1000000', RATE_LIMIT_BURST: '10000000', MAX_PENDING_AUTHORIZERS_PER_LENDER: '100000000', BENCH_MAX_MS: '60000' }),
  stdin: 'pipe', stdout: 'pipe', stderr: 'inherit',
});
const reader = proc.stdout.getReader();
let buf = '';
while (!buf.includes('\n')) buf += new TextDecoder().decode((await reader.read()).value);
const { port, apiKey } = JSON.parse(buf.split('\n')[0]!);
const list = authorizers('acc', Number(process.env.N ?? 1000), { varied: !process.env.SAME });
list[0]!.authorizer_unique_id = '__UNIQ__';
writeFileSync('/tmp/w/body.json', JSON.stringify({ authorizers: list }));
const lua = `
local threads = 0
function setup(thread) threads = threads + 1 thread:set("tid", threads) end
local prefix, suffix
local n = 0
function init(args)
  local f = assert(io.open("/tmp/w/body.json", "rb")) local t = f:read("*a") f:close()
  local i = assert(string.find(t, "__UNIQ__", 1, true))
  prefix = string.sub(t, 1, i - 1) suffix = string.sub(t, i + 8)
  wrk.method = "POST" wrk.headers["Content-Type"] = "application/json" wrk.headers["Authorization"] = "Bearer ${apiKey}"
end
function request() n = n + 1 return wrk.format(nil, nil, nil, prefix .. "${Date.now()}-" .. tid .. "-" .. n .. suffix) end`;
writeFileSync('/tmp/w/a.lua', lua);
console.log(await (await fetch(`http://127.0.0.1:${port}${process.argv[2]}`, {method:"POST", headers:{"content-type":"application/json", authorization:`Bearer ${apiKey}`}, body: Bun.file("/tmp/w/body.json")})).text().then(t=>t.slice(0,200)));
import { readdirSync, readFileSync } from 'node:fs';
const cpu = () => { const m: Record<string, number> = {}; for (const t of readdirSync(`/proc/${proc.pid}/task`)) { try { const st = readFileSync(`/proc/${proc.pid}/task/${t}/stat`, 'utf8'); const comm = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')); const f = st.slice(st.lastIndexOf(')') + 2).split(' '); m[`${t}:${comm}`] = (Number(f[11]) + Number(f[12])); } catch {} } return m; };
const c0 = cpu();
const r = await runWrk({ url: `http://127.0.0.1:${port}${process.argv[2] ?? '/v1/balance_requests'}`, script: '/tmp/w/a.lua', threads: 2, connections: 8, seconds: 8 });
console.log(r.rps, r.non2xx);
const c1 = cpu();
for (const k of Object.keys(c1)) { const d = c1[k]! - (c0[k] ?? 0); if (d > 5) console.log(k, (d / 100 / 8).toFixed(2), 'cores', ((d * 10) / (r.rps * 8)).toFixed(3), 'ms/req'); }
proc.kill('SIGTERM');
await proc.exited;
