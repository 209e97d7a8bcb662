import { Elysia } from 'elysia';
import type { Child } from 'hono/jsx';
import type { Deps } from '../../deps';
import { DomainError } from '../../platform/errors';
import { validated } from '../../platform/validation';
import type { TSchema, Static } from '@sinclair/typebox';
import { SESSION_COOKIE, sameToken, sessionOf, type PortalSession } from './session';
import { html, htmlNow, Layout, Notice, type View } from './ui/components';

// The portal's HTTP edge, shared by every page: cookies read safely, the security headers, and the
// `signedIn` macro (the session, and the CSRF token on every form that changes something).

/** The request's cookies; one whose value does not decode (another application's, on the same host) is ignored. */
export function cookies(request: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (request.headers.get('cookie') ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    try {
      out[part.slice(0, i).trim()] = decodeURIComponent(part.slice(i + 1).trim());
    } catch {
      /* not ours, and not readable: skipped */
    }
  }
  return out;
}

/** A portal cookie: HttpOnly, SameSite=Lax, Secure when the request came over HTTPS (or a proxy says it did). */
export function setCookie(request: Request, name: string, value: string, maxAge?: number): string {
  const secure = new URL(request.url).protocol === 'https:' || request.headers.get('x-forwarded-proto') === 'https';
  return `${name}=${encodeURIComponent(value)}; Path=/portal; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}${maxAge !== undefined ? `; Max-Age=${maxAge}` : ''}`;
}

export const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; script-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

export const htmlResponse = (body: string, status = 200, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { 'content-type': 'text/html; charset=utf-8', ...SECURITY_HEADERS, ...headers } });

export const redirect = (to: string, headers: Record<string, string> = {}) => new Response(null, { status: 303, headers: { location: to, ...headers } });

/** A signed-in page: the layout around the content, as a response. */
export const page = async (view: View, title: string, content: Child, status = 200) =>
  htmlResponse(await html(<Layout title={title} view={view}>{content}</Layout>), status);

export const viewOf = (deps: Pick<Deps, 'clock'>, s: PortalSession, current: string): View => ({
  user: { displayName: s.user.displayName, lender: s.lender.name, csrf: s.csrf },
  now: deps.clock.now(),
  current,
});

/** A form's fields checked against a TypeBox schema: typed values, or the domain error the API would give. */
export function formOf<S extends TSchema>(schema: S, body: unknown): Static<S> {
  const raw = (body ?? {}) as Record<string, unknown>;
  const fields: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (k === '_csrf') continue;
    fields[k] = typeof v === 'string' ? v.trim() : v;
  }
  return validated(schema, fields);
}

/**
 * A page's query checked against its TypeBox schema: an empty field is no filter, and a parameter the schema
 * does not name is ignored (a link may carry others); a bad value is the API's 400.
 */
export function queryOf<S extends TSchema & { properties: Record<string, unknown> }>(schema: S, query: Record<string, string | undefined>): Static<S> {
  return formOf(schema, Object.fromEntries(Object.entries(query).filter(([k, v]) => v !== undefined && v !== '' && k in schema.properties)));
}

/** What a refused form says on its page: the error's message, and each field's problem. */
export function problemOf(e: unknown): string {
  if (!(e instanceof DomainError)) throw e;
  const errors = (e.details?.errors as { path: string; message: string }[] | undefined) ?? [];
  return errors.length > 0 && !e.message.includes(errors[0]!.message) ? `${e.message}: ${errors.map((x) => x.message).join('; ')}` : e.message;
}

/** The session each portal request was found to have, once looked up: what its error page shows. */
const foundSessions = new WeakMap<Request, PortalSession | null>();

/**
 * The `signedIn` macro: a route declared with `{ signedIn: true }` gets `session` (or sends the browser to
 * sign in), and a form it receives (any method but GET) must carry the session's CSRF token, else 403.
 */
export function portalSession(deps: Deps) {
  // One look-up a request, shared by the macro's two hooks.
  const seen = new WeakMap<Request, Promise<PortalSession | null>>();
  const lookup = (request: Request): Promise<PortalSession | null> => {
    let s = seen.get(request);
    if (!s) {
      s = sessionOf(deps, cookies(request)[SESSION_COOKIE]).then((found) => {
        foundSessions.set(request, found);
        return found;
      });
      seen.set(request, s);
    }
    return s;
  };
  return new Elysia({ name: 'portal-session' }).macro({
    signedIn: {
      async beforeHandle({ request, body }) {
        const s = await lookup(request);
        if (!s) return redirect('/portal/login');
        if (request.method !== 'GET' && request.method !== 'HEAD') {
          const token = (body as Record<string, unknown> | null | undefined)?._csrf;
          if (!sameToken(typeof token === 'string' ? token : '', s.csrf)) {
            return htmlResponse(
              htmlNow(
                <Layout title="Form expired">
                  <Notice message={{ kind: 'error', text: 'This form is no longer valid (missing or wrong CSRF token). Go back, reload the page and try again.' }} />
                </Layout>,
              ),
              403,
            );
          }
        }
      },
      async resolve({ request }) {
        // beforeHandle has sent anyone without a session away; the session is there.
        return { session: (await lookup(request)) as PortalSession };
      },
    },
  });
}

/**
 * An error of a portal request as a page (the export's too): the envelope's message, and the navigation when
 * the request is signed in. Null for a request outside the portal.
 */
export function portalErrorPage(deps: Deps, request: Request, err: { status: number; message: string }, headers: Headers): Promise<Response> | null {
  const path = new URL(request.url).pathname;
  if (path !== '/portal' && !path.startsWith('/portal/')) return null;
  return errorPage(deps, request, err, headers);
}

async function errorPage(deps: Deps, request: Request, err: { status: number; message: string }, headers: Headers): Promise<Response> {
  // The session the request was found to have, or, when it failed before that (an unknown page, a refused
  // body), the one its cookie names; none when that cannot be read (the database out of reach).
  let s: PortalSession | null = foundSessions.get(request) ?? null;
  if (!foundSessions.has(request)) s = await sessionOf(deps, cookies(request)[SESSION_COOKIE]).catch(() => null);
  const title = err.status === 404 ? 'Not found' : err.status >= 500 ? 'Something went wrong' : 'That did not work';
  const body = htmlNow(
    <Layout title={title} view={s ? viewOf(deps, s, '') : undefined}>
      <Notice message={{ kind: 'error', text: err.message }} />
      <p>
        <a href={s ? '/portal' : '/portal/login'}>{s ? 'Back to the overview' : 'Sign in'}</a>
      </p>
    </Layout>,
  );
  const extra: Record<string, string> = {};
  const id = headers.get('x-request-id');
  if (id) extra['x-request-id'] = id;
  return htmlResponse(body, err.status, extra);
}
