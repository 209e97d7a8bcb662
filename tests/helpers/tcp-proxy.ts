import { join } from 'node:path';
import { freshPgDatabase } from './pg';

/**
 * A TCP proxy on 127.0.0.1 in front of a server (PostgreSQL, in the tests that take the database away), in a
 * process of its own (tcp-proxy-main.ts): `cut()` closes every connection through it and refuses new ones, as a
 * server that went down looks to its clients; `restore()` lets connections through again.
 */
export interface TcpProxy {
  port: number;
  cut(): Promise<void>;
  restore(): Promise<void>;
  stop(): void;
}

export async function startTcpProxy(target: { hostname: string; port: number }): Promise<TcpProxy> {
  const child = Bun.spawn(['bun', join(import.meta.dir, 'tcp-proxy-main.ts'), `${target.hostname}:${target.port}`], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' });
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  const nextLine = async (): Promise<string> => {
    for (;;) {
      const at = buffered.indexOf('\n');
      if (at >= 0) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 1);
        return line;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error('the proxy process ended');
      buffered += decoder.decode(value);
    }
  };
  const port = Number((await nextLine()).replace(/^port /, ''));
  const say = async (command: string) => {
    child.stdin.write(`${command}\n`);
    await child.stdin.flush();
    if ((await nextLine()) !== 'ok') throw new Error(`the proxy did not take ${command}`);
  };
  return {
    port,
    cut: () => say('cut'),
    restore: () => say('restore'),
    stop: () => child.kill(),
  };
}

/** A fresh PostgreSQL database of the suite's server, a proxy in front of it, and the URL that goes through the proxy. */
export async function pgBehindProxy(): Promise<{ db: ReturnType<typeof freshPgDatabase>; proxy: TcpProxy; url: string; stop(): void }> {
  const db = freshPgDatabase();
  const target = new URL(db.url);
  const proxy = await startTcpProxy({ hostname: target.hostname, port: Number(target.port) });
  const through = new URL(db.url);
  through.port = String(proxy.port);
  return {
    db,
    proxy,
    url: through.toString(),
    stop: () => {
      proxy.stop();
      db.drop();
    },
  };
}
