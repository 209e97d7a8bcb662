import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
import { parseRetryAfter, sendWebhook, WEBHOOK_USER_AGENT } from '../../src/adapters/webhooks/sender';

interface Seen {
  path: string;
  host: string | null;
  headers: Record<string, string>;
  body: string;
}

// One receiver whose path picks the answer, plus a second one that only counts what reaches it.
const seen: Seen[] = [];
let redirectTargetHits = 0;
// The slow receiver holds its answer until the test lets it go.
let releaseSlow: () => void = () => {};
let slowAnswered = false;

const redirectTarget = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch() {
    redirectTargetHits++;
    return new Response('ok');
  },
});

const receiver = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const url = new URL(req.url);
    seen.push({
      path: url.pathname + url.search,
      host: req.headers.get('host'),
      headers: Object.fromEntries(req.headers),
      body: await req.text(),
    });
    switch (url.pathname) {
      case '/ok':
        return new Response('thanks');
      case '/accepted':
        return new Response(null, { status: 202 });
      case '/fail':
        return new Response('boom', { status: 500 });
      case '/redirect':
        return Response.redirect(`http://127.0.0.1:${redirectTarget.port}/elsewhere`, 302);
      case '/redirect-307':
        return new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${redirectTarget.port}/elsewhere` } });
      case '/gone':
        return new Response(null, { status: 410 });
      case '/busy':
        return new Response(null, { status: 429, headers: { 'retry-after': '7' } });
      case '/unavailable':
        return new Response(null, { status: 503, headers: { 'retry-after': new Date(Date.now() + 120_000).toUTCString() } });
      case '/busy-500':
        return new Response(null, { status: 500, headers: { 'retry-after': '7' } });
      case '/slow':
        await new Promise<void>((resolve) => (releaseSlow = resolve));
        slowAnswered = true;
        return new Response('late');
      default:
        return new Response('no such hook', { status: 404 });
    }
  },
});

const base = `http://127.0.0.1:${receiver.port}`;
const body = JSON.stringify({ event_uuid: 'e1', type: 'BALANCE_BATCH_COMPLETED', batch_id: 'b1' });
const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'webhook-signature': 'v1,abc' };
const send = (url: string, extra: Partial<Parameters<typeof sendWebhook>[0]> = {}) =>
  sendWebhook({ url, headers, body, allowPrivate: true, ...extra });

let closedPort = 0;
beforeAll(() => {
  const s = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() });
  closedPort = s.port!;
  s.stop(true);
});
beforeEach(() => {
  seen.length = 0;
  redirectTargetHits = 0;
});
afterAll(() => {
  receiver.stop(true);
  redirectTarget.stop(true);
});

describe('sendWebhook outcomes', () => {
  test('200 is delivered, with the JSON body, signature headers and user agent', async () => {
    const r = await send(`${base}/ok`);
    expect(r).toMatchObject({ outcome: 'delivered', statusCode: 200, error: null, retryAfterMs: null });
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    expect(seen).toHaveLength(1);
    expect(seen[0].body).toBe(body);
    expect(seen[0].headers['content-type']).toBe('application/json');
    expect(seen[0].headers['user-agent']).toBe(WEBHOOK_USER_AGENT);
    expect(seen[0].headers['webhook-id']).toBe('msg_1');
    expect(seen[0].headers['webhook-signature']).toBe('v1,abc');
  });

  test('any 2xx is delivered', async () => {
    expect(await send(`${base}/accepted`)).toMatchObject({ outcome: 'delivered', statusCode: 202 });
  });

  test('500 is a retry carrying the status', async () => {
    expect(await send(`${base}/fail`)).toMatchObject({ outcome: 'retry', statusCode: 500, retryAfterMs: null });
  });

  test('404 is a retry', async () => {
    expect(await send(`${base}/missing`)).toMatchObject({ outcome: 'retry', statusCode: 404 });
  });

  test('302 is a retry and the redirect is not followed', async () => {
    const r = await send(`${base}/redirect`);
    expect(r).toMatchObject({ outcome: 'retry', statusCode: 302, error: 'redirect not followed' });
    expect(await send(`${base}/redirect-307`)).toMatchObject({ outcome: 'retry', statusCode: 307 });
    expect(redirectTargetHits).toBe(0);
  });

  test('410 tells the caller to stop', async () => {
    expect(await send(`${base}/gone`)).toMatchObject({ outcome: 'gone', statusCode: 410 });
  });

  test('429 with Retry-After: 7 asks for 7000 ms', async () => {
    expect(await send(`${base}/busy`)).toMatchObject({ outcome: 'retry', statusCode: 429, retryAfterMs: 7000 });
  });

  test('503 with an HTTP-date Retry-After asks for the time until then', async () => {
    const r = await send(`${base}/unavailable`);
    expect(r).toMatchObject({ outcome: 'retry', statusCode: 503 });
    expect(r.retryAfterMs).toBeGreaterThan(110_000);
    expect(r.retryAfterMs).toBeLessThanOrEqual(120_000);
  });

  test('Retry-After on other statuses is ignored', async () => {
    expect(await send(`${base}/busy-500`)).toMatchObject({ statusCode: 500, retryAfterMs: null });
  });

  test('a receiver slower than the timeout is a retry with a timeout error', async () => {
    try {
      const r = await send(`${base}/slow`, { timeoutMs: 200 });
      expect(r).toMatchObject({ outcome: 'retry', statusCode: null, error: 'timeout after 200 ms' });
      // Given up while the receiver still held its answer: the timeout, not the answer, ended the attempt.
      expect(seen.map((s) => s.path)).toEqual(['/slow']);
      expect(slowAnswered).toBe(false);
      expect(r.durationMs).toBeGreaterThanOrEqual(150);
    } finally {
      releaseSlow();
    }
  });

  test('a closed port is a retry with no status', async () => {
    const r = await send(`http://127.0.0.1:${closedPort}/ok`);
    expect(r).toMatchObject({ outcome: 'retry', statusCode: null, error: 'connection refused' });
  });

  test('a name that does not resolve is a retry, not blocked', async () => {
    const nx = async (): Promise<string[]> => {
      throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
    };
    const r = await send(`http://hooks.example.test:${receiver.port}/ok`, { resolve: nx });
    expect(r).toMatchObject({ outcome: 'retry', statusCode: null });
    expect(r.error).toContain('does not resolve');
  });

  test('a resolver that hangs is cut off by the same timeout', async () => {
    const hang = () => new Promise<string[]>(() => {});
    const r = await send(`http://hooks.example.test:${receiver.port}/ok`, { resolve: hang, timeoutMs: 100 });
    expect(r).toMatchObject({ outcome: 'retry', statusCode: null, error: 'timeout after 100 ms' });
  });
});

describe('sendWebhook target checks at delivery time', () => {
  test('a name now resolving to 127.0.0.1 is blocked and the receiver gets nothing', async () => {
    const r = await sendWebhook({
      url: `https://hooks.example.test:${receiver.port}/ok`,
      headers,
      body,
      allowPrivate: false,
      resolve: async () => ['127.0.0.1'],
    });
    expect(r).toMatchObject({ outcome: 'blocked', statusCode: null });
    expect(r.error).toContain('loopback');
    expect(seen).toHaveLength(0);
  });

  test('one forbidden address among public ones blocks the delivery', async () => {
    const r = await sendWebhook({
      url: 'https://hooks.example.test/ok',
      headers,
      body,
      allowPrivate: false,
      resolve: async () => ['93.184.215.14', '169.254.169.254'],
    });
    expect(r).toMatchObject({ outcome: 'blocked' });
    expect(r.error).toContain('metadata');
  });

  test('an IP-literal target that is private is blocked without a connection', async () => {
    const r = await sendWebhook({ url: `https://127.0.0.1:${receiver.port}/ok`, headers, body, allowPrivate: false });
    expect(r.outcome).toBe('blocked');
    expect(seen).toHaveLength(0);
  });

  test('a URL that stopped being acceptable (http without allowPrivate) is blocked', async () => {
    const r = await sendWebhook({ url: `${base}/ok`, headers, body, allowPrivate: false });
    expect(r).toMatchObject({ outcome: 'blocked' });
    expect(r.error).toContain('scheme http');
  });

  test('the connection goes to the checked address, keeping the registered Host', async () => {
    // hooks.example.test has no system DNS entry, so reaching the receiver proves the injected answer was used.
    let lookups = 0;
    const r = await send(`http://hooks.example.test:${receiver.port}/ok?lender=l1`, {
      resolve: async (host) => {
        lookups++;
        expect(host).toBe('hooks.example.test');
        return ['127.0.0.1'];
      },
    });
    expect(r.outcome).toBe('delivered');
    expect(lookups).toBe(1);
    expect(seen).toHaveLength(1);
    expect(seen[0].host).toBe(`hooks.example.test:${receiver.port}`);
    expect(seen[0].path).toBe('/ok?lender=l1');
  });

  test('an address that refuses falls through to the next checked one', async () => {
    // On Linux all of 127/8 is local, and nothing listens on 127.0.0.2 at the receiver's port.
    const r = await send(`http://hooks.example.test:${receiver.port}/ok`, { resolve: async () => ['127.0.0.2', '127.0.0.1'] });
    expect(r.outcome).toBe('delivered');
    expect(seen).toHaveLength(1);
  });
});

describe('sendWebhook over https', () => {
  const dir = mkdtempSync(join(tmpdir(), 'webhook-tls-'));
  let tlsReceiver: ReturnType<typeof Bun.serve> | undefined;
  const tlsSeen: Array<string | null> = [];

  beforeAll(async () => {
    // openssl makes the test certificate; Debian ships it, and its absence fails here rather than skipping.
    if (Bun.which('openssl') === null) throw new Error('openssl is needed to make the test certificate');
    const made = Bun.spawnSync([
      'openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '2',
      '-subj', '/CN=hooks.example.test', '-addext', 'subjectAltName=DNS:hooks.example.test',
    ]);
    if (made.exitCode !== 0) throw new Error(made.stderr.toString());
    tlsReceiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      tls: { cert: Bun.file(join(dir, 'cert.pem')), key: Bun.file(join(dir, 'key.pem')) },
      fetch(req) {
        tlsSeen.push(req.headers.get('host'));
        return new Response('ok');
      },
    });
  });
  afterAll(() => {
    tlsReceiver?.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  test('a certificate the system does not trust is a retry with a tls error', async () => {
    const r = await send(`https://hooks.example.test:${tlsReceiver!.port}/ok`, { resolve: async () => ['127.0.0.1'] });
    expect(r).toMatchObject({ outcome: 'retry', statusCode: null });
    expect(r.error).toContain('tls error');
    expect(tlsSeen).toHaveLength(0);
  });

  test('the pinned IP is verified against the registered name, not the IP', async () => {
    // Trust is process-wide (NODE_EXTRA_CA_CERTS), as an operator would add a private CA, so a child process
    // carries it; the resolver still maps both names to the receiver's loopback address.
    const sender = resolvePath(import.meta.dir, '../../src/adapters/webhooks/sender.ts');
    const script = join(dir, 'run.ts');
    writeFileSync(
      script,
      `import { sendWebhook } from ${JSON.stringify(sender)};
const go = (name: string) => sendWebhook({ url: 'https://' + name + ':${tlsReceiver!.port}/ok', headers: {}, body: '{}',
  allowPrivate: true, resolve: async () => ['127.0.0.1'] });
console.log(JSON.stringify([await go('hooks.example.test'), await go('other.example.test')]));`,
    );
    const child = Bun.spawn([process.execPath, 'run', script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [out, err, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ]);
    expect(err).toBe('');
    expect(code).toBe(0);
    const [matching, mismatched] = JSON.parse(out);
    expect(matching).toMatchObject({ outcome: 'delivered', statusCode: 200 });
    expect(mismatched).toMatchObject({ outcome: 'retry', statusCode: null });
    expect(mismatched.error).toContain('tls error');
    expect(tlsSeen).toEqual([`hooks.example.test:${tlsReceiver!.port}`]);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  test.each([
    [null, null],
    ['0', 0],
    ['7', 7000],
    [' 120 ', 120_000],
    ['Wed, 01 Jan 2025 00:00:30 GMT', 30_000],
    ['Tue, 31 Dec 2024 23:59:00 GMT', 0],
    ['-5', null],
    ['1.5', null],
    ['soon', null],
  ])('%p -> %p', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});
