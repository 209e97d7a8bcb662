// A signed-in portal user for tests through app.handle: its cookie, a page's CSRF token, and GET and POST
// of forms as a browser sends them.
import type { TestContext } from './context';
import { createUser } from '../../src/modules/portal/users';

export const PORTAL_PASSWORD = 'a long enough password';

export interface PortalClient {
  cookie: string;
  get(path: string): Promise<{ status: number; headers: Headers; text: string }>;
  post(path: string, fields: Record<string, string>, opts?: { csrf?: string | null }): Promise<{ status: number; headers: Headers; text: string }>;
  csrf(): Promise<string>;
}

export async function signedIn(c: TestContext, opts: { lenderId?: string; email?: string; name?: string } = {}): Promise<PortalClient> {
  const email = opts.email ?? `user-${crypto.randomUUID().slice(0, 8)}@example.test`;
  await createUser(c.rt, { lenderId: opts.lenderId ?? c.lender.id, email, displayName: opts.name ?? 'Olive Ops', password: PORTAL_PASSWORD, now: c.clock.now() });
  const form = await c.request('GET', '/portal/login', { key: null });
  const loginCookie = form.headers.get('set-cookie')!.split(';')[0]!;
  const loginCsrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
  const res = await c.request('POST', '/portal/login', {
    key: null,
    raw: new URLSearchParams({ _csrf: loginCsrf, email, password: PORTAL_PASSWORD }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: loginCookie },
  });
  const cookie = res.headers.getSetCookie().find((x) => x.startsWith('drs_portal='))!.split(';')[0]!;
  const get = async (path: string) => {
    const r = await c.request('GET', path, { key: null, headers: { cookie } });
    return { status: r.status, headers: r.headers, text: await r.text() };
  };
  const csrf = async () => /name="_csrf" value="([^"]+)"/.exec((await get('/portal')).text)![1]!;
  return {
    cookie,
    get,
    csrf,
    async post(path, fields, o = {}) {
      const token = o.csrf === undefined ? await csrf() : o.csrf;
      const body = new URLSearchParams({ ...(token === null ? {} : { _csrf: token }), ...fields }).toString();
      const r = await c.request('POST', path, { key: null, raw: body, headers: { 'content-type': 'application/x-www-form-urlencoded', cookie } });
      return { status: r.status, headers: r.headers, text: await r.text() };
    },
  };
}
