// engine: postgres
// State the replicas on one PostgreSQL database share: rate buckets, sign-in counts and the portal's held files.
// Two replicas here are two sets of service deps on one database (a pool each, the same vault key, as VAULT_KEY
// gives every replica); then two spawned services on one database share the API key's bucket, record a file
// held through one of them once, and check exactly LOCK_AFTER passwords of 20 sign-ins sent to both at once.
// Nothing a table holds names an email, an address, a key or a session token in the clear.
import { afterAll, describe, expect, test } from 'bun:test';
import { sql } from 'drizzle-orm';
import { MAX_HELD, PgHeldFiles, PgSignInCounter } from '../../src/modules/portal/shared-state';
import { SignInThrottle } from '../../src/modules/portal/session';
import { PgRateBuckets } from '../../src/platform/rate-buckets';
import { rows } from '../../src/platform/sql/pg';
import { openPg } from '../../src/platform/pg';
import { createUser } from '../../src/modules/portal/users';
import { onPostgres } from '../helpers/pg';
import { pgServiceDeps } from '../helpers/pg-service-deps';
import { ServiceHarness, TEST_API_KEY, type ServiceProcess } from '../helpers/server';
import { pgStoreDeps } from '../helpers/pg-store-deps';

const CALLERS = 20;

if (!onPostgres) {
  test('state shared by replicas on one PostgreSQL database: not applicable without DATABASE_URL=postgres://…', () => {});
} else {
  const a = pgServiceDeps({ max: CALLERS + 5 });
  const b = pgServiceDeps({ max: CALLERS + 5, replicaOf: a });
  afterAll(async () => {
    await b.close();
    await a.close();
  });
  const table = (name: string) => rows<Record<string, unknown>>(a.pg.db, sql`SELECT * FROM ${sql.raw(name)}`);
  /** A table's rows as text, bytes read as Latin-1 (each byte one character), to look for a value in the clear. */
  const tableText = async (name: string) =>
    (await table(name)).map((r) => Object.values(r).map((v) => (ArrayBuffer.isView(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('latin1') : String(v))).join('|')).join('\n');

  describe('rate buckets', () => {
    test('a bucket emptied through one replica refuses on the other, and refills for both', async () => {
      const now = a.clock.now();
      const onA = a.deps.engine.rateBuckets('api-key', 1, 5);
      const onB = b.deps.engine.rateBuckets('api-key', 1, 5);
      for (let i = 0; i < 5; i++) expect(await onA.take('key-id-1', now)).toBe(0);
      expect(await onB.take('key-id-1', now)).toBe(1);
      expect(await onB.wait('key-id-1', now)).toBe(1);
      expect(await onA.take('key-id-1', now)).toBe(1);
      // Another key's bucket is its own.
      expect(await onB.take('key-id-2', now)).toBe(0);
      // A second later one token is back, for whichever replica asks first.
      expect(await onB.take('key-id-1', now + 1000)).toBe(0);
      expect(await onA.take('key-id-1', now + 1000)).toBe(1);
    });

    test('20 takes at once through two replicas spend exactly the burst', async () => {
      const now = a.clock.now();
      const onA = a.deps.engine.rateBuckets('api-key', 1, 10);
      const onB = b.deps.engine.rateBuckets('api-key', 1, 10);
      const waits = await Promise.all(Array.from({ length: CALLERS }, (_, i) => (i % 2 ? onA : onB).take('key-id-burst', now)));
      expect(waits.filter((w) => w === 0)).toHaveLength(10);
      expect(waits.filter((w) => w > 0)).toHaveLength(CALLERS - 10);
    });

    test('failures spent on one replica are waited for on the other; full idle buckets are swept', async () => {
      const now = a.clock.now();
      const onA = a.deps.engine.rateBuckets('auth-failures', 1, 3);
      const onB = b.deps.engine.rateBuckets('auth-failures', 1, 3);
      expect(await onB.wait('address-hash', now)).toBe(0);
      for (let i = 0; i < 3; i++) await onA.spend('address-hash', now);
      expect(await onB.wait('address-hash', now)).toBe(1);
      const sweeper = new PgRateBuckets(a.pg, 'auth-failures', 1, 3);
      expect(await sweeper.sweep(now + 30_000)).toBe(0);
      expect(await sweeper.sweep(now + 61_000)).toBe(1);
      expect(await onB.wait('address-hash', now + 61_000)).toBe(0);
    });
  });

  describe('sign-in counts', () => {
    test('20 attempts at once through two replicas: exactly LOCK_AFTER are let through, then the pair is locked on both', async () => {
      const now = a.clock.now();
      const onA = new PgSignInCounter(a.deps);
      const onB = new PgSignInCounter(b.deps);
      const attempts = await Promise.all(Array.from({ length: CALLERS }, (_, i) => (i % 2 ? onA : onB).attempt(i % 3 ? 'Ann@Example.com' : ' ann@example.com', '10.0.0.7', now)));
      const through = attempts.filter((r): r is { locked: false; failures: number } => !r.locked);
      expect(through).toHaveLength(SignInThrottle.LOCK_AFTER);
      expect(through.map((r) => r.failures).sort((x, y) => x - y)).toEqual(Array.from({ length: SignInThrottle.LOCK_AFTER }, (_, i) => i + 1));
      expect(await onA.status('ann@example.com', '10.0.0.7', now)).toEqual({ failures: SignInThrottle.LOCK_AFTER, locked: true });
      expect(await onB.status('ann@example.com', '10.0.0.7', now)).toEqual({ failures: SignInThrottle.LOCK_AFTER, locked: true });
      // The email alone never locks: from another address it is slowed, not refused.
      expect(await onB.attempt('ann@example.com', '10.0.0.8', now)).toEqual({ locked: false, failures: SignInThrottle.LOCK_AFTER + 1 });
      // After the window the pair may try again.
      expect(await onA.attempt('ann@example.com', '10.0.0.7', now + SignInThrottle.WINDOW_MS + 1)).toEqual({ locked: false, failures: 1 });
    }, 30_000);

    test('an address locks across emails, and a success gives its reservation back', async () => {
      const now = a.clock.now();
      const onA = new PgSignInCounter(a.deps);
      const onB = new PgSignInCounter(b.deps);
      const results = await Promise.all(Array.from({ length: CALLERS }, (_, i) => (i % 2 ? onA : onB).attempt(`user${i}@example.com`, '10.0.1.1', now)));
      expect(results.filter((r) => !r.locked)).toHaveLength(SignInThrottle.LOCK_AFTER);

      expect(await onA.attempt('bo@example.com', '10.0.2.1', now)).toEqual({ locked: false, failures: 1 });
      await onB.succeed('bo@example.com', '10.0.2.1', now);
      expect(await onA.status('bo@example.com', '10.0.2.1', now)).toEqual({ failures: 0, locked: false });
    }, 30_000);

    test('the table names no email and no address', async () => {
      const text = await tableText('sign_in_counts');
      expect(text.length).toBeGreaterThan(2);
      for (const clear of ['example.com', 'ann@', '10.0.0.7', '10.0.1.1']) expect(text).not.toContain(clear);
    });
  });

  describe('held files', () => {
    const csv = (n: number) => new TextEncoder().encode(`authorizer_unique_id,payment_amount,payment_status\nloan-${n},12.34,settled\n`);

    test('a file held through one replica is confirmed through the other exactly once', async () => {
      const now = a.clock.now();
      const onA = new PgHeldFiles(a.deps);
      const onB = new PgHeldFiles(b.deps);
      const id = await onA.hold('session-hash-1', { bytes: csv(1), name: 'results-june.csv', at: now });
      expect(await onB.take('session-hash-1', 'another id', now)).toBeNull();
      expect(await onB.take('session-hash-2', id, now)).toBeNull();
      const taken = await Promise.all(Array.from({ length: CALLERS }, (_, i) => (i % 2 ? onA : onB).take('session-hash-1', id, now)));
      const got = taken.filter((t) => t !== null);
      expect(got).toHaveLength(1);
      expect(new TextDecoder().decode(got[0]!.bytes)).toBe(new TextDecoder().decode(csv(1)));
      expect(got[0]!.name).toBe('results-june.csv');
    });

    test('one file a session, at most 16 held (the oldest go), none past 30 minutes', async () => {
      const now = a.clock.now();
      const onA = new PgHeldFiles(a.deps);
      const onB = new PgHeldFiles(b.deps);
      const first = await onA.hold('session-s', { bytes: csv(2), name: 'a.csv', at: now });
      const second = await onB.hold('session-s', { bytes: csv(3), name: 'b.csv', at: now + 1 });
      expect(await onA.take('session-s', first, now + 2)).toBeNull();
      const ids: string[] = [];
      for (let i = 0; i < MAX_HELD + 4; i++) ids.push(await (i % 2 ? onA : onB).hold(`session-${i}`, { bytes: csv(i), name: `${i}.csv`, at: now + 10 + i }));
      expect(await table('held_files')).toHaveLength(MAX_HELD);
      expect(await onB.take('session-s', second, now + 100)).toBeNull();
      expect(await onB.take('session-0', ids[0]!, now + 100)).toBeNull();
      expect((await onA.take(`session-${MAX_HELD + 3}`, ids[MAX_HELD + 3]!, now + 100))?.name).toBe(`${MAX_HELD + 3}.csv`);
      // Past 30 minutes a file is not given, and the sweep deletes it.
      expect(await onA.take('session-5', ids[5]!, now + 31 * 60_000)).toBeNull();
      await onB.sweep(now + 31 * 60_000);
      expect(await table('held_files')).toHaveLength(0);
    });

    test('the table holds neither the session nor the file in the clear', async () => {
      const now = a.clock.now();
      await new PgHeldFiles(a.deps).hold('the-session-token-hash', { bytes: csv(77), name: 'borrowers-july.csv', at: now });
      const text = await tableText('held_files');
      for (const clear of ['the-session-token-hash', 'borrowers-july', 'loan-77', 'payment_amount']) expect(text).not.toContain(clear);
    });
  });

  describe('two services on one database', () => {
    const h = new ServiceHarness({ RATE_LIMIT_PER_SECOND: '1', RATE_LIMIT_BURST: '5' });
    afterAll(() => h.cleanup());
    let started: Promise<[ServiceProcess, ServiceProcess]> | null = null;
    /** Two services on the harness's one database, each its own replica, started once (one after the other) for the tests below. */
    const replicas = () => (started ??= h.start({ replicaId: 'replica-a' }).then(async (one) => [one, await h.start({ replicaId: 'replica-b' })]));

    test("an API key's bucket is one across replicas; the table names its id, not the key", async () => {
      const [one, two] = await replicas();
      const started = Date.now();
      const statuses = await Promise.all(Array.from({ length: CALLERS }, (_, i) => (i % 2 ? one : two).call('GET', '/v1/webhook_endpoints')));
      const elapsedS = Math.ceil((Date.now() - started) / 1000);
      const ok = statuses.filter((s) => s.status === 200).length;
      // The burst, and at most one more a second of the time the requests took: in two buckets of their own
      // the replicas would have let twice the burst through.
      expect(ok).toBeGreaterThanOrEqual(5);
      expect(ok).toBeLessThanOrEqual(5 + elapsedS);
      expect(statuses.filter((s) => s.status === 429).length).toBe(CALLERS - ok);
      const db = h.database();
      const text = JSON.stringify(db.query('SELECT key FROM rate_buckets').all());
      db.close();
      expect(text).toContain('api-key:');
      expect(text).not.toContain(TEST_API_KEY);
    }, 120_000);

    const EMAIL = 'ops@example.test';
    /** The portal session's cookie value, once signed in. */
    let sessionToken = '';
    const PASSWORD = 'a long enough password';
    /** The sign-in form of a service: its CSRF cookie and token. */
    const loginForm = async (url: string) => {
      const r = await fetch(`${url}/portal/login`);
      return { cookie: r.headers.get('set-cookie')!.split(';')[0]!, csrf: /name="_csrf" value="([^"]+)"/.exec(await r.text())![1]! };
    };
    const signIn = async (url: string, password: string) => {
      const f = await loginForm(url);
      return fetch(`${url}/portal/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: f.cookie },
        body: new URLSearchParams({ _csrf: f.csrf, email: EMAIL, password }).toString(),
      });
    };
    const CSV =
      'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\n' +
      'replica-loan-1,REPLICA-1,425.00,settled,2026-11-02,2026-11-04,,\n';

    test('a file checked through one service is recorded once, whichever services the confirmation reaches', async () => {
      const [one, two] = await replicas();
      const db = h.database();
      const lenderId = (db.query("SELECT id FROM lenders WHERE name = 'default'").all() as { id: string }[])[0]!.id;
      db.close();
      const users = openPg(h.pg!.url, { max: 2 });
      try {
        await createUser(pgStoreDeps(users), { lenderId, email: EMAIL, displayName: 'Ops', password: PASSWORD, now: Date.now() });
      } finally {
        await users.close();
      }
      const signedIn = await signIn(one.url, PASSWORD);
      expect(signedIn.status).toBe(303);
      const token = signedIn.headers.getSetCookie().find((c) => c.startsWith('drs_portal='))!.split(';')[0]!;
      sessionToken = token.slice('drs_portal='.length);
      const page = await (await fetch(`${two.url}/portal/payments/results-upload`, { headers: { cookie: token } })).text();
      const form = new FormData();
      form.append('_csrf', /name="_csrf" value="([^"]+)"/.exec(page)![1]!);
      form.append('action', 'check');
      form.append('file', new Blob([CSV], { type: 'text/csv' }), 'replica-results.csv');
      const checked = await (await fetch(`${one.url}/portal/payments/results-upload`, { method: 'POST', body: form, headers: { cookie: token } })).text();
      const held = /name="checked" value="([^"]+)"/.exec(checked)![1]!;
      const csrf = /<form[^>]*>(?:(?!<\/form>)[\s\S])*name="checked"/.exec(checked)![0].match(/name="_csrf" value="([^"]+)"/)![1]!;
      const confirmations = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          fetch(`${(i % 2 ? one : two).url}/portal/payments/results-upload`, {
            method: 'POST',
            headers: { cookie: token, 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ _csrf: csrf, action: 'confirm', checked: held }).toString(),
          }).then((r) => r.text()),
        ),
      );
      expect(confirmations.filter((t) => t.includes('Recorded replica-results.csv: 1 row.'))).toHaveLength(1);
      expect(confirmations.filter((t) => t.includes('no longer held'))).toHaveLength(5);
      const after = h.database();
      expect(after.query('SELECT count(*)::int AS n FROM payment_result_uploads').all()).toEqual([{ n: 1 }]);
      expect(after.query('SELECT count(*)::int AS n FROM held_files').all()).toEqual([{ n: 0 }]);
      after.close();
    }, 120_000);

    test('20 sign-ins at once through two services: exactly LOCK_AFTER passwords are checked, then the pair is locked on both', async () => {
      const [one, two] = await replicas();
      const statuses = await Promise.all(Array.from({ length: CALLERS }, (_, i) => signIn((i % 2 ? one : two).url, `wrong password ${i}!`).then((r) => r.status)));
      expect(statuses.filter((s) => s === 401)).toHaveLength(SignInThrottle.LOCK_AFTER);
      expect(statuses.filter((s) => s === 429)).toHaveLength(CALLERS - SignInThrottle.LOCK_AFTER);
      // Locked on both, the right password too: nothing more is checked for this pair.
      expect((await signIn(one.url, PASSWORD)).status).toBe(429);
      expect((await signIn(two.url, PASSWORD)).status).toBe(429);
      const db = h.database();
      const stored = JSON.stringify([db.query('SELECT * FROM sign_in_counts').all(), db.query('SELECT key FROM rate_buckets').all(), db.query('SELECT key, id, name FROM held_files').all()]);
      const sessions = (db.query('SELECT token_hash FROM portal_sessions').all() as { token_hash: string }[]).map((r) => r.token_hash);
      db.close();
      expect(stored).toContain(String(SignInThrottle.LOCK_AFTER));
      expect(sessionToken.length).toBeGreaterThan(20);
      for (const clear of [EMAIL, 'example.test', '127.0.0.1', sessionToken, ...sessions]) expect(stored).not.toContain(clear);
    }, 120_000);
  });
}
