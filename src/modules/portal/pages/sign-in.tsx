import { Elysia } from 'elysia';
import type { Deps } from '../../../deps';
import { resolveClient } from '../../../http/https';
import { cookies, htmlResponse, portalSession, redirect, setCookie } from '../plugin';
import { endSession, LOGIN_CSRF_COOKIE, newLoginCsrf, sameToken, SESSION_COOKIE, sessionOf, SignInThrottle, startSession } from '../session';
import { MAX_PASSWORD_LENGTH, verifySignIn } from '../users';
import { Csrf, htmlNow, Layout, Notice } from '../ui/components';

// /portal/login and /portal/logout. A sign-in attempt is counted before its password is checked; a failed one
// is slowed and, repeated, locks the pair of email and address (and an address across emails), never an email
// alone: a stranger cannot lock a user out. Signing in always starts a new session.

/** The sign-in form's fields: one missing, not text, or too long is read as empty and does not sign in (a too-long password is never hashed). */
const str = (v: unknown, max: number) => (typeof v === 'string' && v.length <= max ? v : '');
const readSignIn = (body: unknown) => {
  const raw = (body ?? {}) as Record<string, unknown>;
  return { email: str(raw.email, 254), password: str(raw.password, MAX_PASSWORD_LENGTH), _csrf: str(raw._csrf, 256) };
};

function SignInForm(props: { csrf: string; error?: string; email?: string }) {
  return (
    <Layout title="Sign in">
      <Notice message={props.error ? { kind: 'error', text: props.error } : null} />
      <form method="post" action="/portal/login">
        <Csrf token={props.csrf} />
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autocomplete="username" required value={props.email ?? ''} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required />
        <button type="submit">Sign in</button>
      </form>
      <p>
        <small>
          Accounts are made by the operator of this service (<code>bun run cli user create</code>); there is no sign-up. Ask them for one, or
          for a new password.
        </small>
      </p>
    </Layout>
  );
}

export const signInPages = (deps: Deps) => {
  // In memory on SQLite; on PostgreSQL shared by the replicas in the database.
  const throttle = deps.portal.signIns;
  const form = (request: Request, status: number, opts: { error?: string; email?: string } = {}) => {
    const csrf = newLoginCsrf();
    return htmlResponse(htmlNow(<SignInForm csrf={csrf} {...opts} />), status, { 'set-cookie': setCookie(request, LOGIN_CSRF_COOKIE, csrf, 3600) });
  };
  return new Elysia({ name: 'portal-sign-in' })
    .use(portalSession(deps))
    .get('/portal/login', async ({ request }) => ((await sessionOf(deps, cookies(request)[SESSION_COOKIE])) ? redirect('/portal') : form(request, 200)), {
      detail: { hide: true },
    })
    .post(
      '/portal/login',
      async ({ request, body, server }) => {
        const { email, password, _csrf } = readSignIn(body);
        if (!sameToken(_csrf, cookies(request)[LOGIN_CSRF_COOKIE])) return form(request, 403, { error: 'This form expired; sign in again.', email });
        // The client as the rest of the service sees it: behind a TRUST_PROXY proxy, the address it forwarded.
        const address = resolveClient(deps.config, request, server?.requestIP(request)?.address ?? null).address ?? 'local';
        // Counted before the password is checked: a burst sent at once cannot have more than the lock's number checked.
        const attempt = await throttle.attempt(email, address, deps.clock.now());
        if (attempt.locked) return form(request, 429, { error: 'Too many failed sign-ins. Wait 15 minutes and try again.', email });
        const user = await verifySignIn(deps, email, password);
        if (!user) {
          deps.logger.info({ address, failures: attempt.failures }, 'portal sign-in failed');
          await Bun.sleep(SignInThrottle.delayMs(attempt.failures));
          return form(request, 401, { error: 'The email or password is not right.', email });
        }
        await throttle.succeed(email, address, deps.clock.now());
        // A new session id on every sign-in; the session cookie this browser sent, if any, ends with it.
        const { token } = await startSession(deps, user.id, cookies(request)[SESSION_COOKIE]);
        return new Response(null, {
          status: 303,
          headers: [
            ['location', '/portal'],
            ['set-cookie', setCookie(request, SESSION_COOKIE, token)],
            ['set-cookie', setCookie(request, LOGIN_CSRF_COOKIE, '', 0)],
          ],
        });
      },
      { detail: { hide: true } },
    )
    .post(
      '/portal/logout',
      async ({ session, request }) => {
        await endSession(deps, session.tokenHash);
        return redirect('/portal/login', { 'set-cookie': setCookie(request, SESSION_COOKIE, '', 0) });
      },
      { signedIn: true, detail: { hide: true } },
    );
};
