// engine: both
// The production start is the server process itself, so what a supervisor sends (SIGTERM, kill -9) reaches
// the server; the pages name that form, which needs no package.json beside it.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, freePort, waitFor } from '../helpers/server';

const dir = mkdtempSync(join(tmpdir(), 'drs-cmd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A markdown page of the repository, by its path from the root. */
const page = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** A `## ` section of a page: from its heading to the next heading of the same level (or the end). */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`no "## ${heading}" section`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** The commands of a page's `sh` blocks. */
const shCommands = (text: string) => [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!).join('\n');

/** The README's Docker section and the Deployment section of docs/operations.md: where the image is run. */
const deploymentSections = () => [section(page('README.md'), 'Docker'), section(page('docs/operations.md'), 'Deployment')];

/** The image's CMD, in exec form. */
function dockerCmd(): string[] {
  const line = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n').find((l) => /^CMD\s/.test(l));
  return JSON.parse(line!.replace(/^CMD\s+/, '')) as string[];
}

describe('the production start command', () => {
  test('the image runs the server directly (exec form, no `bun run` wrapper)', () => {
    expect(dockerCmd()).toEqual(['bun', 'src/index.ts']);
  });

  test('the README, docs/operations.md and the Dockerfile say how to try the image locally and how to run the CLI inside it', () => {
    for (const deployment of deploymentSections()) {
      expect(deployment).toMatch(/docker run [^\n]*-p 127\.0\.0\.1:3000:3000[^\n]*-e ALLOW_INSECURE_HTTP=true/);
      expect(deployment).toContain('HTTPS_REQUIRED');
      expect(deployment).toMatch(/docker exec \S+ bun run cli key create/);
    }
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toContain('ALLOW_INSECURE_HTTP=true');
    expect(dockerfile).toMatch(/docker exec \S+ bun run cli/);
  });

  test('outside the image the service listens on loopback; the image sets HOST=0.0.0.0 itself', () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^\s*HOST=0\.0\.0\.0\b/m);
    for (const path of ['README.md', 'docs/operations.md']) expect(page(path)).toMatch(/\| `HOST` \| `127\.0\.0\.1` \|/);
  });

  test('the README and docs/ never put the wrapper in the background or in production: those commands use the direct form', () => {
    const pages = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const commands = pages.map((path) => shCommands(page(path))).join('\n');
    // A backgrounded wrapper is the one a later `kill %1` or kill -9 would leave the server behind.
    expect(commands).not.toMatch(/bun run start\s*&/);
    expect(shCommands(page('README.md'))).toMatch(/bun src\/index\.ts &/);
    for (const deployment of deploymentSections()) {
      expect(deployment).toContain('`bun src/index.ts`');
      expect(shCommands(deployment)).not.toContain('bun run start');
    }
  });

  test('kill -9 of the process the image starts stops the server: nothing is left listening', async () => {
    const port = freePort();
    const [, ...args] = dockerCmd();
    const proc = Bun.spawn([process.execPath, ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/tmp',
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_PATH: join(dir, 'service.sqlite'),
        VAULT_KEY_FILE: join(dir, 'vault.key'),
        LOG_LEVEL: 'warn',
      },
      stdout: 'ignore',
      stderr: 'inherit',
    });
    const url = `http://127.0.0.1:${port}/healthz`;
    const answers = async () => {
      try {
        return (await fetch(url, { signal: AbortSignal.timeout(500) })).ok;
      } catch {
        return false;
      }
    };
    await waitFor('the server to answer', answers, 15_000);
    proc.kill('SIGKILL');
    await proc.exited;
    await waitFor('the port to stop answering', async () => !(await answers()), 15_000);
  }, 30_000);
});
