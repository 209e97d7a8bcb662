// The PostgreSQL server the store contracts run against, beside SQLite, in the same `bun test` run:
//   - the suite's own server when the whole suite runs on PostgreSQL (DATABASE_URL=postgres://…);
//   - TEST_PG_URL when given (CI starts one cluster and hands it to both of its runs);
//   - otherwise a throwaway cluster started here, once per test process, from Debian's postgresql binaries
//     (/usr/lib/postgresql/<version>/bin) on a loopback port, fsync off, removed when the process exits;
//   - none when those binaries are missing: the contracts then run on SQLite only, and say so.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isPostgresUrl } from '../../src/platform/pg';

let server: string | null | undefined;

/** Why no server is there, when none is. */
export let noServerReason = '';

/** The URL of a PostgreSQL server whose maintenance database a test may create databases on, or null. */
export function contractPgServer(): string | null {
  if (server !== undefined) return server;
  if (isPostgresUrl(process.env.DATABASE_URL)) return (server = process.env.DATABASE_URL!);
  if (isPostgresUrl(process.env.TEST_PG_URL)) return (server = process.env.TEST_PG_URL!);
  if (process.env.TEST_PG_URL === 'none') {
    noServerReason = 'TEST_PG_URL=none';
    return (server = null);
  }
  return (server = startCluster());
}

function binDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(a) - Number(b));
  const last = versions.at(-1);
  return last ? join(root, last, 'bin') : null;
}

function startCluster(): string | null {
  const bin = binDir();
  if (!bin) {
    noServerReason = "PostgreSQL's server binaries are not installed (Debian: apt-get install postgresql)";
    return null;
  }
  // initdb refuses to run as root: a root test process runs the server as the postgres user.
  const asRoot = process.getuid?.() === 0;
  const as = (cmd: string[]) => (asRoot ? ['runuser', '-u', 'postgres', '--', ...cmd] : cmd);
  const dir = mkdtempSync(join(tmpdir(), 'drs-contract-pg-'));
  if (asRoot) Bun.spawnSync(['chown', 'postgres', dir]);
  const data = join(dir, 'data');
  const init = Bun.spawnSync(as([join(bin, 'initdb'), '-D', data, '-U', 'drs', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8']), {
    stdout: 'pipe',
    stderr: 'pipe',
  });
  if (init.exitCode !== 0) {
    rmSync(dir, { recursive: true, force: true });
    noServerReason = `initdb failed: ${init.stderr.toString().trim().split('\n').at(-1)}`;
    return null;
  }
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = 40000 + Math.floor(Math.random() * 15000);
    const start = Bun.spawnSync(
      as([
        join(bin, 'pg_ctl'),
        '-D',
        data,
        '-l',
        join(dir, 'log'),
        '-w',
        '-o',
        `-k ${dir} -p ${port} -h 127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`,
        'start',
      ]),
      { stdout: 'pipe', stderr: 'pipe' },
    );
    if (start.exitCode === 0) {
      // Stopped and removed once this process is gone, however it ends (bun test exits without an 'exit'
      // event, and a run cut short is killed): a watcher outlives it by a second at most.
      const stop = as([join(bin, 'pg_ctl'), '-D', data, '-m', 'immediate', 'stop']).map((a) => `'${a}'`).join(' ');
      const watcher = Bun.spawn(['sh', '-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${stop} >/dev/null 2>&1; rm -rf '${dir}'`], {
        stdio: ['ignore', 'ignore', 'ignore'],
      });
      watcher.unref();
      return `postgres://drs@127.0.0.1:${port}/postgres`;
    }
  }
  rmSync(dir, { recursive: true, force: true });
  noServerReason = 'the throwaway cluster did not start';
  return null;
}
