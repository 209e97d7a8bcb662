// The portal's sign-in, sessions and users, through the real app: cookie flags, the idle timeout, throttled
// failures, disabled users, the operator commands that manage users, and the results-upload page's size.
import { afterAll, describe, expect, test } from 'bun:test';
import { createTestContext, type TestContext } from '../../helpers/context';
import { createUser, resetPassword, disableUser, findUserByEmail, normalizeEmail, MIN_PASSWORD_LENGTH, MAX_PASSWORD_LENGTH, UserError } from '../../../src/modules/portal/users';
import { IDLE_MS, SignInThrottle } from '../../../src/modules/portal/session';
import { runCli } from '../../../scripts/cli';
import { enrollBorrower } from '../../helpers/fixtures';

const contexts: TestContext[] = [];
afterAll(() => contexts.forEach((c) => c.close()));
const fresh = () => {
  const c = createTestContext();
  contexts.push(c);
  return c;
};
const PASSWORD = 'a long enough password';

/** A sign-in form as a browser gets it: its cookie and CSRF token. */
async function loginForm(c: TestContext) {
  const form = await c.request('GET', '/portal/login', { key: null });
  return { cookie: form.headers.get('set-cookie')!.split(';')[0]!, csrf: /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]! };
}
/** The form sent; `cookies` are what else the browser holds for the portal (a session cookie, say). */
function submit(c: TestContext, form: { cookie: string; csrf: string }, email: string, password: string, cookies: string[] = []) {
  const body = new URLSearchParams({ _csrf: form.csrf, email, password }).toString();
  return c.request('POST', '/portal/login', { key: null, raw: body, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: [form.cookie, ...cookies].join('; ') } });
}
async function signIn(c: TestContext, email: string, password: string, cookies: string[] = []) {
  return submit(c, await loginForm(c), email, password, cookies);
}
const failedSignIns = (c: TestContext) =>
  c.logs
    .join('')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === 'portal sign-in failed');
const sessionCookie = (res: Response) => res.headers.getSetCookie().find((x) => x.startsWith('drs_portal='));

describe('sign-in and sessions', () => {
  test('a session cookie that is HttpOnly and SameSite=Lax; the pages need it; idle 30 minutes ends it', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'Ann@Example.test', displayName: 'Ann', password: PASSWORD, now: c.clock.now() });
    const res = await signIn(c, 'ann@example.test', PASSWORD);
    expect(res.status).toBe(303);
    const set = sessionCookie(res)!;
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Lax/);
    expect(set).not.toMatch(/Secure/);
    const cookie = set.split(';')[0]!;
    expect((await c.request('GET', '/portal/monitoring', { key: null, headers: { cookie } })).status).toBe(200);
    expect((await c.request('GET', '/portal/monitoring', { key: null })).headers.get('location')).toBe('/portal/login');
    c.clock.advance(IDLE_MS - 1000);
    expect((await c.request('GET', '/portal/monitoring', { key: null, headers: { cookie } })).status).toBe(200);
    c.clock.advance(IDLE_MS + 1);
    const expired = await c.request('GET', '/portal/monitoring', { key: null, headers: { cookie } });
    expect(expired.status).toBe(303);
    expect(expired.headers.get('location')).toBe('/portal/login');
  });

  test('an error page shows the navigation to a signed-in user, also for a page no route serves', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'err@example.test', displayName: 'Err', password: PASSWORD, now: c.clock.now() });
    const cookie = sessionCookie(await signIn(c, 'err@example.test', PASSWORD))!.split(';')[0]!;
    const signedIn = await c.request('GET', '/portal/no-such-page', { key: null, headers: { cookie } });
    expect(signedIn.status).toBe(404);
    const page = await signedIn.text();
    expect(page).toContain('Back to the overview');
    expect(signedIn.headers.get('x-request-id')).toBeTruthy();
    const stranger = await c.request('GET', '/portal/no-such-page', { key: null });
    expect(stranger.status).toBe(404);
    const strangerPage = await stranger.text();
    expect(strangerPage).toContain('Sign in');
    expect(strangerPage).not.toContain('Back to the overview');
  });

  test('over HTTPS (a trusted proxy says so) the cookie is Secure too', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'sec@example.test', displayName: 'Sec', password: PASSWORD, now: c.clock.now() });
    const form = await c.app.handle(new Request('https://localhost/portal/login'));
    expect(form.headers.get('set-cookie')).toMatch(/Secure/);
  });

  test('the same message for a wrong email and a wrong password; failures are counted and slowed; a disabled user cannot sign in', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'bob@example.test', displayName: 'Bob', password: PASSWORD, now: c.clock.now() });
    const wrongEmail = await signIn(c, 'nobody@example.test', PASSWORD);
    const wrongPassword = await signIn(c, 'bob@example.test', 'wrong password!!');
    expect(wrongEmail.status).toBe(401);
    expect(wrongPassword.status).toBe(401);
    expect(await wrongEmail.text()).toContain('The email or password is not right.');
    expect(await wrongPassword.text()).toContain('The email or password is not right.');
    expect(SignInThrottle.delayMs(1)).toBe(250);
    expect(SignInThrottle.delayMs(3)).toBe(1000);
    expect(SignInThrottle.delayMs(20)).toBe(5000);
    const t = new SignInThrottle();
    for (let i = 0; i < SignInThrottle.LOCK_AFTER; i++) t.attempt('x@y.z', '10.0.0.1', 0);
    // The pair and the address are locked; the email from elsewhere is not, but its answers are as slow.
    expect(t.status('X@y.z', '10.0.0.1', 1000)).toEqual({ failures: 10, locked: true });
    expect(t.status('other@y.z', '10.0.0.1', 1000).locked).toBe(true);
    expect(t.status('x@y.z', '10.0.0.9', 1000)).toEqual({ failures: 10, locked: false });
    expect(t.status('x@y.z', '10.0.0.1', SignInThrottle.WINDOW_MS + 1)).toEqual({ failures: 0, locked: false });
    // Ten addresses guessing one email: none locked, every answer slowed by the email's count.
    const spread = new SignInThrottle();
    for (let i = 0; i < 10; i++) spread.attempt('y@y.z', `10.0.1.${i}`, 0);
    expect(spread.status('y@y.z', '10.0.1.99', 1)).toEqual({ failures: 10, locked: false });
    expect(SignInThrottle.delayMs(spread.status('y@y.z', '10.0.1.99', 1).failures)).toBe(5000);
    await disableUser(c.rt, 'bob@example.test', c.clock.now());
    expect((await signIn(c, 'bob@example.test', PASSWORD)).status).toBe(401);
  }, 30_000);

  test('signing in again starts a new session and ends the one the browser presented', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'rot@example.test', displayName: 'Rot', password: PASSWORD, now: c.clock.now() });
    const page = (cookie: string) => c.request('GET', '/portal/monitoring', { key: null, headers: { cookie } });
    const first = sessionCookie(await signIn(c, 'rot@example.test', PASSWORD))!.split(';')[0]!;
    expect((await page(first)).status).toBe(200);
    const again = await signIn(c, 'rot@example.test', PASSWORD, [first]);
    expect(again.status).toBe(303);
    const second = sessionCookie(again)!.split(';')[0]!;
    expect(second).not.toBe(first);
    expect((await page(second)).status).toBe(200);
    const old = await page(first);
    expect(old.status).toBe(303);
    expect(old.headers.get('location')).toBe('/portal/login');
    // A session of another browser, not presented, is not touched.
    const elsewhere = sessionCookie(await signIn(c, 'rot@example.test', PASSWORD))!.split(';')[0]!;
    expect((await page(second)).status).toBe(200);
    expect((await page(elsewhere)).status).toBe(200);
    // A failed sign-in changes nothing.
    expect((await signIn(c, 'rot@example.test', 'a wrong password', [second])).status).toBe(401);
    expect((await page(second)).status).toBe(200);
  });

  test('a burst of wrong passwords sent at once: only as many are checked as the lock allows, the rest are refused unchecked, and the right password is locked out', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'burst@example.test', displayName: 'Burst', password: PASSWORD, now: c.clock.now() });
    const BURST = 40;
    const forms = await Promise.all(Array.from({ length: BURST }, () => loginForm(c)));
    const right = await loginForm(c);
    // Every guess sent before any is answered; a checked wrong guess is held (250 ms doubling), a refused one is not.
    const burst = forms.map((f, i) => submit(c, f, 'burst@example.test', `wrong guess ${i}!!`).then((r) => r.status));
    const firstRefusal = Promise.race(burst.map((p) => p.then((status) => (status === 429 ? 'refused' : new Promise<never>(() => {})))));
    // While the checked guesses are still held, the right password is refused: the lock counts what is in flight.
    expect(await Promise.race([firstRefusal, Promise.all(burst).then(() => 'never refused')])).toBe('refused');
    expect((await submit(c, right, 'burst@example.test', PASSWORD)).status).toBe(429);
    const statuses = await Promise.all(burst);
    expect(statuses.filter((x) => x === 401)).toHaveLength(SignInThrottle.LOCK_AFTER);
    expect(statuses.filter((x) => x === 429)).toHaveLength(BURST - SignInThrottle.LOCK_AFTER);
    // Exactly as many passwords were checked (and failed) as the lock allows.
    expect(failedSignIns(c)).toHaveLength(SignInThrottle.LOCK_AFTER);
    expect(failedSignIns(c).map((l) => l.failures).sort((a, b) => a - b)).toEqual(Array.from({ length: SignInThrottle.LOCK_AFTER }, (_, i) => i + 1));
    expect((await signIn(c, 'burst@example.test', PASSWORD)).status).toBe(429);
  }, 30_000);

  test('an attempt is counted before its password is checked; a success gives its place back', () => {
    const t = new SignInThrottle();
    for (let i = 0; i < SignInThrottle.LOCK_AFTER; i++) expect(t.attempt('r@y.z', '10.0.3.1', 0)).toEqual({ locked: false, failures: i + 1 });
    // Nothing has failed yet, but ten are being checked: the eleventh is refused and not counted.
    expect(t.attempt('r@y.z', '10.0.3.1', 0)).toEqual({ locked: true });
    expect(t.status('r@y.z', '10.0.3.1', 0)).toEqual({ failures: SignInThrottle.LOCK_AFTER, locked: true });
    const s = new SignInThrottle();
    s.attempt('s@y.z', '10.0.3.2', 0);
    s.attempt('s@y.z', '10.0.3.2', 0);
    s.succeed('s@y.z', '10.0.3.2', 0);
    // The pair is cleared; the address and the email keep the failure, not the success.
    expect(s.status('other@y.z', '10.0.3.2', 0).failures).toBe(1);
    expect(s.status('s@y.z', '10.0.3.9', 0).failures).toBe(1);
  });

  test('a new password ends the user’s sessions', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'cy@example.test', displayName: 'Cy', password: PASSWORD, now: c.clock.now() });
    const cookie = sessionCookie(await signIn(c, 'cy@example.test', PASSWORD))!.split(';')[0]!;
    await resetPassword(c.rt, 'cy@example.test', 'another long password');
    expect((await c.request('GET', '/portal/monitoring', { key: null, headers: { cookie } })).status).toBe(303);
  });

  test('passwords of 12 to 1,024 characters, emails that are emails, one user per email', async () => {
    const c = fresh();
    const base = { lenderId: c.lender.id, displayName: 'D', now: c.clock.now() };
    await expect(createUser(c.rt, { ...base, email: 'd@example.test', password: 'x'.repeat(MIN_PASSWORD_LENGTH - 1) })).rejects.toBeInstanceOf(UserError);
    await expect(createUser(c.rt, { ...base, email: 'd@example.test', password: 'x'.repeat(MAX_PASSWORD_LENGTH + 1) })).rejects.toBeInstanceOf(UserError);
    await createUser(c.rt, { ...base, email: 'long@example.test', password: 'x'.repeat(MAX_PASSWORD_LENGTH) });
    // The longest password signs in; one longer is not even hashed, and does not.
    expect((await signIn(c, 'long@example.test', 'x'.repeat(MAX_PASSWORD_LENGTH))).status).toBe(303);
    expect((await signIn(c, 'long@example.test', 'x'.repeat(MAX_PASSWORD_LENGTH + 1))).status).toBe(401);
    await expect(createUser(c.rt, { ...base, email: 'not an email', password: PASSWORD })).rejects.toBeInstanceOf(UserError);
    await createUser(c.rt, { ...base, email: 'd@example.test', password: PASSWORD });
    await expect(createUser(c.rt, { ...base, email: 'D@example.test', password: PASSWORD })).rejects.toBeInstanceOf(UserError);
    const stored = c.sql.query('SELECT password_hash AS h FROM dashboard_users').get() as { h: string };
    expect(stored.h).toStartWith('$argon2id$');
  });
});

/** A sign-in from a client address (behind a trusted proxy on loopback): its status and how long it took. */
const signInFrom = (base: string) => async (client: string, email: string, password: string) => {
  const headers = { 'x-forwarded-for': client, 'x-forwarded-proto': 'https' };
  const form = await fetch(`${base}/portal/login`, { headers });
  const cookie = form.headers.get('set-cookie')!.split(';')[0]!;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
  const t0 = performance.now();
  const res = await fetch(`${base}/portal/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...headers, cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
  });
  await res.text();
  return { status: res.status, ms: performance.now() - t0 };
};

describe('the sign-in lock and other applications’ cookies', () => {
  test('a stranger’s failures lock the stranger’s address, not the user; guessing from elsewhere is still slowed', async () => {
    // Behind a proxy on loopback, so each client has its own address (X-Forwarded-For).
    const c = createTestContext({ TRUST_PROXY: 'loopback' });
    contexts.push(c);
    c.app.listen({ hostname: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${c.app.server!.port}`;
    try {
      await createUser(c.rt, { lenderId: c.lender.id, email: 'eve-target@example.test', displayName: 'T', password: PASSWORD, now: c.clock.now() });
      const attempt = signInFrom(base);
      // Ten wrong passwords from a stranger's address, sent at once (each answer is held by the throttle).
      const stranger = '203.0.113.7';
      const guesses = await Promise.all(Array.from({ length: SignInThrottle.LOCK_AFTER }, (_, i) => attempt(stranger, 'eve-target@example.test', `wrong guess ${i}!!`)));
      expect(guesses.map((g) => g.status)).toEqual(Array(SignInThrottle.LOCK_AFTER).fill(401));
      // The stranger's address is locked now, for this email and any other.
      expect((await attempt(stranger, 'eve-target@example.test', PASSWORD)).status).toBe(429);
      expect((await attempt(stranger, 'someone-else@example.test', PASSWORD)).status).toBe(429);
      // A guess from yet another address is not locked out but is as slow as the email's failures make it (5 s).
      const slowed = await attempt('198.51.100.9', 'eve-target@example.test', 'another wrong one');
      expect(slowed.status).toBe(401);
      expect(slowed.ms).toBeGreaterThanOrEqual(4900);
      // The user, from their own address, signs in.
      expect((await attempt('192.0.2.10', 'eve-target@example.test', PASSWORD)).status).toBe(303);
    } finally {
      await c.app.stop(true);
    }
  }, 30_000);

  test('an email with white space at its ends, or in another case, is one user and one throttle bucket', async () => {
    const c = createTestContext({ TRUST_PROXY: 'loopback' });
    contexts.push(c);
    c.app.listen({ hostname: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${c.app.server!.port}`;
    try {
      await createUser(c.rt, { lenderId: c.lender.id, email: 'A@a.test', displayName: 'A', password: PASSWORD, now: c.clock.now() });
      const attempt = async (client: string, email: string, password: string) => (await signInFrom(base)(client, email, password)).status;
      const variants = [' a@a.test ', '\u00a0a@a.test', '\u3000A@A.TEST\t', '\u0085a@a.test\u2028'];
      // One wrong guess of each variant, each from its own address: only the email's bucket is shared, and it
      // counts every one (the failures that slow the answers climb 1, 2, 3, 4 instead of being 1 four times).
      const guesses = await Promise.all(variants.map((v, i) => attempt(`203.0.113.${20 + i}`, v, 'a wrong password')));
      expect(guesses).toEqual(variants.map(() => 401));
      expect(failedSignIns(c).map((l) => l.failures).sort()).toEqual([1, 2, 3, 4]);
      // The variants name the one user: the right password with any of them signs in.
      expect(await attempt('203.0.113.30', '\u3000a@a.test\t', PASSWORD)).toBe(303);
    } finally {
      await c.app.stop(true);
    }
    // The pair's bucket too: ten wrong guesses from one address, each variant in turn, lock every variant there.
    const t = new SignInThrottle();
    for (let i = 0; i < SignInThrottle.LOCK_AFTER; i++) t.attempt(['a@a.test', ' A@a.test', '\u00a0a@a.test\u00a0', '\ta@A.test\u3000'][i % 4]!, '10.0.4.1', 0);
    for (const v of ['a@a.test', '\u3000a@a.test\t', '\u0085A@A.TEST', '\ufeffa@a.test\u2029']) {
      expect(t.status(v, '10.0.4.1', 0)).toEqual({ failures: SignInThrottle.LOCK_AFTER, locked: true });
      expect(t.status(v, '10.0.4.2', 0)).toEqual({ failures: SignInThrottle.LOCK_AFTER, locked: false });
    }
    expect(t.status('b@a.test', '10.0.4.2', 0).failures).toBe(0);
    // One normalization, for the throttle, the look-up and the users stored: every white space at the ends, and case.
    expect(normalizeEmail('\u3000\u00a0\t A@Example.TEST \u2028\u0085\ufeff')).toBe('a@example.test');
    expect(normalizeEmail('a\u00a0b@x.test')).toBe('a\u00a0b@x.test');
    expect((await findUserByEmail(c.rt, '\u00a0A@A.TEST\t'))?.email).toBe('a@a.test');
  }, 30_000);

  test('a cookie that does not decode (another application’s) is ignored: the pages answer, never 500', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'cookie@example.test', displayName: 'C', password: PASSWORD, now: c.clock.now() });
    const session = sessionCookie(await signIn(c, 'cookie@example.test', PASSWORD))!.split(';')[0]!;
    const bad = 'other_app=%E0%A4%A';
    expect((await c.request('GET', '/portal/login', { key: null, headers: { cookie: bad } })).status).toBe(200);
    expect((await c.request('GET', '/portal/monitoring', { key: null, headers: { cookie: bad } })).status).toBe(303);
    expect((await c.request('GET', '/portal/monitoring', { key: null, headers: { cookie: `${bad}; ${session}` } })).status).toBe(200);
    expect((await c.request('GET', '/portal', { key: null, headers: { cookie: `${session}; ${bad}` } })).status).toBe(200);
  });
});

describe('operator commands for users', () => {
  test('user create / list / disable / reset-password, the password read from stdin', async () => {
    const c = fresh();
    const env = { ...c.sameDatabase(), VAULT_KEY_FILE: c.rt.config.vaultKeyFile };
    const lenderName = (c.sql.query('SELECT name FROM lenders WHERE id = ?').get(c.lender.id) as { name: string }).name;
    const stdin = (text: string) => ({ readStdin: async () => text });
    const out = await runCli(['user', 'create', lenderName, 'ops@example.test', '--name', 'Olive Ops', '--password-stdin'], env, stdin(`${PASSWORD}\n`));
    expect(out).toContain('ops@example.test');
    await expect(runCli(['user', 'create', lenderName, 'short@example.test', '--name', 'S', '--password-stdin'], env, stdin('short\n'))).rejects.toThrow(/12 characters/);
    await expect(runCli(['user', 'create', lenderName, 'argv@example.test', '--name', 'A'], env, stdin(PASSWORD))).rejects.toThrow(/password-stdin/);
    expect(await runCli(['user', 'list', lenderName], env)).toContain('Olive Ops');
    expect((await signIn(c, 'ops@example.test', PASSWORD)).status).toBe(303);
    await runCli(['user', 'reset-password', 'ops@example.test', '--password-stdin'], env, stdin('a brand new passphrase\n'));
    expect((await signIn(c, 'ops@example.test', 'a brand new passphrase')).status).toBe(303);
    await runCli(['user', 'disable', 'ops@example.test'], env);
    expect((await signIn(c, 'ops@example.test', 'a brand new passphrase')).status).toBe(401);
  }, 30_000);
});

describe('the results-upload page', () => {
  test('a file with thousands of problems: the counts and the first 100 problems, with how many more', async () => {
    const c = fresh();
    await createUser(c.rt, { lenderId: c.lender.id, email: 'up@example.test', displayName: 'Up', password: PASSWORD, now: c.clock.now() });
    const cookie = sessionCookie(await signIn(c, 'up@example.test', PASSWORD))!.split(';')[0]!;
    const pageHtml = await (await c.request('GET', '/portal/payments/results-upload', { key: null, headers: { cookie } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(pageHtml)![1]!;
    const header = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
    const rows = Array.from({ length: 5_000 }, (_, i) => `b${i},REF-${i},,sent,2026-11-02,,,`);
    const form = new FormData();
    form.append('_csrf', csrf);
    form.append('action', 'check');
    form.append('file', new Blob([`${header}\n${rows.join('\n')}\n`], { type: 'text/csv' }), 'many.csv');
    const res = await c.request('POST', '/portal/payments/results-upload', { key: null, form, headers: { cookie } });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toMatch(/Data rows<\/th><td>5,000</);
    expect(html.match(/<tr><td>\d+<\/td>/g)).toHaveLength(100);
    expect(html).toContain('4,900 more problems are not shown here');
    expect(html.length).toBeLessThan(100_000);
  }, 30_000);

  test('rows an earlier upload recorded are said to be so: never counted as recorded again, nothing to confirm when none is new', async () => {
    const c = fresh();
    expect((await c.json('POST', '/v1/payment_enrollments', { body: { borrowers: [enrollBorrower('pa-1'), enrollBorrower('pa-2')] } })).status).toBe(207);
    await createUser(c.rt, { lenderId: c.lender.id, email: 'again@example.test', displayName: 'Again', password: PASSWORD, now: c.clock.now() });
    const cookie = sessionCookie(await signIn(c, 'again@example.test', PASSWORD))!.split(';')[0]!;
    const HERE = '/portal/payments/results-upload';
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await (await c.request('GET', HERE, { key: null, headers: { cookie } })).text())![1]!;
    const post = async (fields: Record<string, string>, file?: string) => {
      const form = new FormData();
      form.append('_csrf', csrf);
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      if (file !== undefined) form.append('file', new Blob([file], { type: 'text/csv' }), 'again.csv');
      const res = await c.request('POST', HERE, { key: null, form, headers: { cookie } });
      expect(res.status).toBe(200);
      return res.text();
    };
    /** Checked, then confirmed: the page after the confirmation. */
    const record = async (file: string) => {
      const checked = /name="checked" value="([^"]+)"/.exec(await post({ action: 'check' }, file))![1]!;
      return post({ action: 'confirm', checked });
    };
    const header = 'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code';
    const one = 'pa-1,PA-1,10.00,settled,2026-11-02,2026-11-04,,';
    const two = 'pa-2,PA-2,20.00,settled,2026-11-02,2026-11-04,,';
    expect(await record(`${header}\n${one}\n`)).toContain('Recorded again.csv: 1 row.');

    const half = await post({ action: 'check' }, `${header}\n${one}\n${two}\n`);
    expect(half).toMatch(/Already recorded by an earlier upload<\/th><td>1</);
    expect(half).toContain('Record 1 row');
    const halfDone = await post({ action: 'confirm', checked: /name="checked" value="([^"]+)"/.exec(half)![1]! });
    expect(halfDone).toContain('Recorded again.csv: 1 row; 1 row was already recorded by an earlier upload and is not recorded again.');

    const all = await post({ action: 'check' }, `${header}\n${one}\n${two}\n`);
    expect(all).toMatch(/Already recorded by an earlier upload<\/th><td>2</);
    expect(all).toContain('Every accepted row is already recorded by an earlier upload: there is nothing new to record.');
    expect(all).not.toContain('name="checked"');
    // The history: each upload with its rows recorded before.
    const history = await (await c.request('GET', HERE, { key: null, headers: { cookie } })).text();
    expect(history).toContain('<th scope="col">Already recorded</th>');
    expect(history).toContain('<td>2 of 2</td><td>2</td><td>0</td><td>1</td>');
    expect((await c.json('GET', '/v1/payment_results/uploads')).body.uploads.map((u: { already_recorded: number }) => u.already_recorded)).toEqual([1, 0]);
  }, 30_000);
});
