import { Elysia } from 'elysia';
import { resolveClient } from '../../http/https';
import { join } from 'node:path';
import type { Deps } from '../../deps';
import { NotFound } from '../../platform/errors';
import { validated } from '../../platform/validation';
import { getSchedule, listSchedules, view as scheduleView } from '../schedules/service';
import { createConnection, deleteConnection, listConnections, updateConnection } from '../payment-connections/service';
import { CreateConnectionBody, UpdateConnectionBody } from '../payment-connections/model';
import { uploadSummary, type UploadSummary } from '../payment-results-upload/service';
import { csrfField, esc, facts, loginPage, notice, page, table } from './pages';
import { endSession, LOGIN_CSRF_COOKIE, newLoginCsrf, sameToken, SESSION_COOKIE, sessionOf, SignInThrottle, startSession, type PortalSession } from './session';
import { verifySignIn } from './users';
import { cookies, htmlResponse, portalSession, problemOf, redirect } from './plugin';
import { overviewPages } from './pages/overview';
import { showBidiControls } from './ui/format';
import { developerPages } from './pages/developers';
import { rulesPages } from './pages/rules';
import { borrowerPages } from './pages/borrowers';
import { balanceCheckPages } from './pages/balance-checks';
import { UploadHistory, uploadHistoryPages } from './pages/upload-history';

// The lender portal: the same services as the API (no rule is written twice), behind a signed-in session.

const PICO = join(import.meta.dir, '../../../node_modules/@picocss/pico/css/pico.classless.min.css');
const PORTAL_CSS = join(import.meta.dir, 'assets/portal.css');

type Form = Record<string, unknown>;

// The pages still written as template strings: their text's bidi controls are written out at the response.
const html = (body: string, status = 200, headers: Record<string, string> = {}) => htmlResponse(showBidiControls(body), status, headers);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);

export function portalRoutes(deps: Deps) {
  const throttle = new SignInThrottle();
  const secure = (request: Request) => new URL(request.url).protocol === 'https:' || request.headers.get('x-forwarded-proto') === 'https';
  const cookie = (request: Request, name: string, value: string, maxAge?: number) =>
    `${name}=${encodeURIComponent(value)}; Path=/portal; HttpOnly; SameSite=Lax${secure(request) ? '; Secure' : ''}${maxAge !== undefined ? `; Max-Age=${maxAge}` : ''}`;

  /** A page's handler given the session the `signedIn` macro resolved (it has checked the CSRF token of a form) and the form. */
  const guarded =
    (handler: (s: PortalSession, c: { request: Request; body: Form; query: Record<string, string | undefined>; params: Record<string, string> }) => Promise<Response> | Response) =>
    (c: { session: PortalSession; request: Request; body: unknown; query: Record<string, string | undefined>; params: Record<string, string> }) =>
      handler(c.session, { ...c, body: (c.body ?? {}) as Form });
  const userOf = (s: PortalSession) => ({ displayName: s.user.displayName, lender: s.lender.name, csrf: s.csrf });
  const ctxOf = (s: PortalSession) => ({ lender: s.lender, deps });
  const render = (s: PortalSession, current: string, title: string, body: string, status = 200) => html(page({ title, body, user: userOf(s), current }), status);

  // --- Payments › Connection --------------------------------------------------------------------------------
  const connectionsPage = (s: PortalSession, message: { kind: 'ok' | 'error'; text: string } | null = null, status = 200) => {
    const list = listConnections({ ctx: ctxOf(s) });
    const rows = list.connections.map((k) => {
      const role = k.is_default ? 'Default' : k.merchant_ref ? `Tag ${esc(k.merchant_ref)}` : 'Unused';
      const action = (name: string, label: string) =>
        `<form method="post" action="/portal/payments/connections/${esc(k.id)}">${csrfField(s.csrf)}<input type="hidden" name="action" value="${name}"><button type="submit">${label}</button></form>`;
      const forms = [
        !k.is_default && !k.merchant_ref ? action('promote', `Promote ${esc(k.label)}`) : '',
        k.is_default ? action('demote', `Demote ${esc(k.label)}`) : '',
        `<form method="post" action="/portal/payments/connections/${esc(k.id)}">${csrfField(s.csrf)}<input type="hidden" name="action" value="label"><label>New label for ${esc(k.label)} <input name="label" value="${esc(k.label)}" maxlength="80" required></label><button type="submit">Save label</button></form>`,
        `<form method="post" action="/portal/payments/connections/${esc(k.id)}">${csrfField(s.csrf)}<input type="hidden" name="action" value="replace"><label>New API key for ${esc(k.label)} <input name="api_key" type="password" autocomplete="off" required></label><button type="submit">Replace key</button></form>`,
        `<a href="/portal/payments/connections/${esc(k.id)}/delete">Delete ${esc(k.label)}</a>`,
      ];
      return [esc(k.label), esc(k.processor), esc(k.rail_scope), role, `…${esc(k.key_last4 ?? '')}`, esc(k.last_poll_at ?? 'never'), esc(k.last_poll_error ?? ''), forms.join('')];
    });
    const missing = list.missing_default_rails.length
      ? notice('error', `No default key for ${list.missing_default_rails.join(' and ')}: borrowers enrolled without a merchant ref are skipped for those payment types.`)
      : '';
    return render(
      s,
      '/portal/payments/connections',
      'Payments › Connection',
      `${notice(message?.kind ?? 'ok', message?.text)}${missing}
<p>Payments read through these keys: ${list.ingested}; matched to a borrower: ${list.matched}. Last read: ${esc(list.last_poll_at ?? 'never')}.</p>
${table(['Label', 'Processor', 'Rail scope', 'Role', 'Key', 'Last poll', 'Poll error', 'Actions'], rows, 'Processor keys, defaults first')}
<h2>Add a key</h2>
<form method="post" action="/portal/payments/connections">
${csrfField(s.csrf)}
<label for="api_key">API key</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" required>
<label for="rail_scope">Rail scope</label>
<select id="rail_scope" name="rail_scope" required><option value="ach">ACH</option><option value="card">Card</option><option value="both">Both</option></select>
<label for="is_default"><input id="is_default" name="is_default" type="checkbox" value="true"> Default key</label>
<label for="merchant_ref">Merchant ref</label>
<input id="merchant_ref" name="merchant_ref" pattern="[a-z0-9_-]{1,64}">
<label for="label">Label</label>
<input id="label" name="label" maxlength="80">
<button type="submit">Add key</button>
</form>
<h2>Payments you create at your processor</h2>
<p>Give a payment you create at your processor yourself the reference <code>DRS-{authorizer_id}-{your_payment_id}</code> (in Stripe, the metadata <code>drs_reference</code> or the description). The service then matches its results to the borrower enrolled with that authorizer_id.</p>`,
      status,
    );
  };

  // A form is checked against the API's own schema, so the portal and the API refuse the same things.
  const formToConnection = (body: Form) => validated(CreateConnectionBody, {
    api_key: str(body.api_key),
    rail_scope: str(body.rail_scope),
    ...(body.is_default === 'true' ? { is_default: true } : {}),
    ...(str(body.merchant_ref) ? { merchant_ref: str(body.merchant_ref) } : {}),
    ...(str(body.label) ? { label: str(body.label) } : {}),
  });
  const change = (body: Record<string, unknown>) => validated(UpdateConnectionBody, body);

  // --- Payments › Results upload ---------------------------------------------------------------------------
  const checked = new CheckedFiles();
  const PROBLEMS_SHOWN = 100;
  const rowsText = (n: number) => `${n} row${n === 1 ? '' : 's'}`;
  const resultsPage = (
    s: PortalSession,
    message: { kind: 'ok' | 'error'; text: string } | null = null,
    shown: { report: UploadSummary; name: string; checkedId?: string | null } | null = null,
    token?: string,
  ) => {
    let report = '';
    if (shown) {
      const r = shown.report;
      // The first problems only: a page of every problem of a large file would be too large to open.
      const problems = r.problems.slice(0, PROBLEMS_SHOWN).map((p) => [String(p.row), esc(p.severity), esc(p.reason)]);
      const hidden = r.problemCount - problems.length;
      const confirm =
        shown.checkedId != null
          ? `<form method="post" action="/portal/payments/results-upload">${csrfField(s.csrf)}<input type="hidden" name="action" value="confirm"><input type="hidden" name="checked" value="${esc(shown.checkedId)}"><button type="submit">Record ${rowsText(r.rowCount)}</button></form>`
          : r.dryRun
            ? '<p>No row can be recorded: correct the file and check it again.</p>'
            : '';
      report = `<h2>${r.dryRun ? 'Check' : 'Recorded'}: ${esc(shown.name)}</h2>
${facts(r.dryRun ? 'Dry run: nothing was recorded yet' : 'Recorded', [
  ['Format', r.format],
  ['Data rows', r.dataRowCount],
  ['Rows accepted', r.rowCount],
  ['Matched to a borrower', r.matched],
  ['Needing attention', r.needsAttention],
])}
${problems.length ? table(['Row', 'Severity', 'Problem'], problems, 'Problems (error: the row is not recorded; warning: recorded, or stored unmatched)') : '<p>No problems.</p>'}
${hidden > 0 ? `<p>${hidden} more ${hidden === 1 ? 'problem is' : 'problems are'} not shown here; the API's report (POST /v1/payment_results/uploads?dryRun=true) lists them.</p>` : ''}
${confirm}`;
    }
    return render(
      s,
      '/portal/payments/results-upload',
      'Payments › Results upload',
      `${notice(message?.kind ?? 'ok', message?.text)}
<p>Outcomes of debits made outside the service, as CSV (at most 10 MB, UTF-8): one row per debit with authorizer_unique_id or reference,
payment_amount, payment_status, submitted_at, settled_at, returned_at and return_code. The file is checked first and nothing is
recorded until you confirm.</p>
<form method="post" action="/portal/payments/results-upload" enctype="multipart/form-data">
${csrfField(s.csrf)}
<input type="hidden" name="action" value="check">
<label for="results_file">Results CSV file</label>
<input id="results_file" name="file" type="file" accept=".csv,text/csv" required>
<button type="submit">Check file</button>
</form>
${report}
${String(UploadHistory({ deps, s, now: deps.clock.now(), token }))}`,
    );
  };


  return new Elysia({ name: 'portal' })
    .get('/portal/assets/pico.css', () => new Response(Bun.file(PICO), { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=86400' } }), { detail: { hide: true } })
    .get('/portal/assets/portal.css', () => new Response(Bun.file(PORTAL_CSS), { headers: { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'public, max-age=86400' } }), { detail: { hide: true } })
    .use(portalSession(deps))
    .use(overviewPages(deps))
    .use(developerPages(deps))
    .use(rulesPages(deps))
    .use(borrowerPages(deps))
    .use(balanceCheckPages(deps))
    .use(uploadHistoryPages(deps))
    .get(
      '/portal/login',
      ({ request }) => {
        if (sessionOf(deps, cookies(request)[SESSION_COOKIE])) return redirect('/portal');
        const csrf = newLoginCsrf();
        return html(loginPage({ csrf }), 200, { 'set-cookie': cookie(request, LOGIN_CSRF_COOKIE, csrf, 3600) });
      },
      { detail: { hide: true } },
    )
    .post(
      '/portal/login',
      async ({ request, body, server }) => {
        const form = (body ?? {}) as Form;
        const email = String(form.email ?? '').slice(0, 254);
        const password = String(form.password ?? '');
        const csrf = newLoginCsrf();
        const again = (error: string, status: number) =>
          html(loginPage({ csrf, error, email }), status, { 'set-cookie': cookie(request, LOGIN_CSRF_COOKIE, csrf, 3600) });
        if (!sameToken(String(form._csrf ?? ''), cookies(request)[LOGIN_CSRF_COOKIE])) return again('This form expired; sign in again.', 403);
        // The client as the rest of the service sees it: behind a TRUST_PROXY proxy, the address it forwarded.
        const address = resolveClient(deps.config, request, server?.requestIP(request)?.address ?? null).address ?? 'local';
        const now = deps.clock.now();
        const before = throttle.status(email, address, now);
        if (before.locked) return again('Too many failed sign-ins. Wait 15 minutes and try again.', 429);
        const user = await verifySignIn(deps.db, email, password);
        if (!user) {
          throttle.fail(email, address, now);
          deps.logger.info({ address, failures: before.failures + 1 }, 'portal sign-in failed');
          await Bun.sleep(SignInThrottle.delayMs(before.failures + 1));
          return again('The email or password is not right.', 401);
        }
        throttle.succeed(email, address);
        const { token } = startSession(deps, user.id);
        return new Response(null, {
          status: 303,
          headers: [
            ['location', '/portal'],
            ['set-cookie', cookie(request, SESSION_COOKIE, token)],
            ['set-cookie', cookie(request, LOGIN_CSRF_COOKIE, '', 0)],
          ],
        });
      },
      { detail: { hide: true } },
    )
    .post(
      '/portal/logout',
      guarded((s, { request }) => {
        endSession(deps, s.tokenHash);
        return redirect('/portal/login', { 'set-cookie': cookie(request, SESSION_COOKIE, '', 0) });
      }),
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      '/portal/monitoring',
      guarded((s) => {
        const list = listSchedules({ ctx: ctxOf(s), input: { limit: 100 } });
        const rows = list.schedules.map((x) => [
          `<a href="/portal/monitoring/${esc(x.schedule_id)}">${esc(x.name)}</a>`,
          esc(x.status),
          `every ${x.interval_days} days at ${esc(x.time_of_day)} UTC`,
          esc(x.next_run_at ?? '—'),
          esc(x.last_run_at ?? 'never'),
          String(x.total_authorizers),
        ]);
        return render(s, '/portal/monitoring', 'Monitoring', table(['Schedule', 'Status', 'Runs', 'Next run', 'Last run', 'Authorizers'], rows, 'Scheduled balance monitoring'));
      }),
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      '/portal/monitoring/:id',
      guarded((s, { params }) => {
        const x = scheduleView(ctxOf(s), getSchedule({ ctx: ctxOf(s), input: { id: params.id! } }));
        return render(
          s,
          '/portal/monitoring',
          x.name,
          `${facts('Schedule', [
            ['Status', x.status],
            ['Every', `${x.interval_days} days at ${x.time_of_day} UTC`],
            ['Starts', x.starts_at ?? '—'],
            ['Expires', x.expires_at],
            ['Next run', x.next_run_at ?? '—'],
            ['Last run', x.last_run_at ?? 'never'],
            ['Authorizers', x.total_authorizers],
            ['Threshold', x.threshold_amount === null ? '—' : `$${x.threshold_amount}`],
            ['Webhook', x.webhook ?? '—'],
          ])}<p><a href="/portal/monitoring">All schedules</a></p>`,
        );
      }),
      { signedIn: true, detail: { hide: true } },
    )
    .get('/portal/payments/connections', guarded((s) => connectionsPage(s)), { signedIn: true, detail: { hide: true } })
    .post(
      '/portal/payments/connections',
      guarded(async (s, { body }) => {
        try {
          const k = await createConnection({ ctx: ctxOf(s), input: { body: formToConnection(body) } });
          return connectionsPage(s, { kind: 'ok', text: `Added ${k.label}.` });
        } catch (e) {
          return connectionsPage(s, { kind: 'error', text: problemOf(e) }, 400);
        }
      }),
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      '/portal/payments/connections/:id/delete',
      guarded((s, { params }) => {
        const k = listConnections({ ctx: ctxOf(s) }).connections.find((x) => x.id === params.id);
        if (!k) throw new NotFound('Processor key', params.id);
        return render(
          s,
          '/portal/payments/connections',
          'Delete a processor key',
          `<p>Delete <strong>${esc(k.label)}</strong> (key ending ${esc(k.key_last4)})? The key is erased; payments already read through it are kept.</p>
<form method="post" action="/portal/payments/connections/${esc(k.id)}">${csrfField(s.csrf)}<input type="hidden" name="action" value="delete"><button type="submit">Delete key</button></form>
<p><a href="/portal/payments/connections">Cancel</a></p>`,
        );
      }),
      { signedIn: true, detail: { hide: true } },
    )
    .post(
      '/portal/payments/connections/:id',
      guarded(async (s, { params, body }) => {
        const id = params.id!;
        try {
          switch (body.action) {
            case 'promote':
              await updateConnection({ ctx: ctxOf(s), input: { id, body: change({ is_default: true }) } });
              return connectionsPage(s, { kind: 'ok', text: 'Promoted to default.' });
            case 'demote':
              await updateConnection({ ctx: ctxOf(s), input: { id, body: change({ is_default: false }) } });
              return connectionsPage(s, { kind: 'ok', text: 'Demoted.' });
            case 'label':
              await updateConnection({ ctx: ctxOf(s), input: { id, body: change({ label: str(body.label) ?? '' }) } });
              return connectionsPage(s, { kind: 'ok', text: 'Label saved.' });
            case 'replace':
              await updateConnection({ ctx: ctxOf(s), input: { id, body: change({ api_key: str(body.api_key) ?? '' }) } });
              return connectionsPage(s, { kind: 'ok', text: 'Key replaced.' });
            case 'delete':
              deleteConnection({ ctx: ctxOf(s), input: { id } });
              return connectionsPage(s, { kind: 'ok', text: 'Key deleted.' });
            default:
              return connectionsPage(s, { kind: 'error', text: 'Unknown action.' }, 400);
          }
        } catch (e) {
          if (e instanceof NotFound) throw e;
          return connectionsPage(s, { kind: 'error', text: problemOf(e) }, 400);
        }
      }),
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      '/portal/payments/results-upload',
      guarded((s, { query }) => resultsPage(s, null, null, typeof query.next_page_token === 'string' && query.next_page_token.length <= 512 ? query.next_page_token : undefined)),
      { signedIn: true, detail: { hide: true } },
    )
    .post(
      '/portal/payments/results-upload',
      guarded(async (s, { body }) => {
        checked.sweep(deps.clock.now());
        try {
          if (body.action === 'confirm') {
            const held = checked.take(s.tokenHash, String(body.checked ?? ''));
            if (!held) return resultsPage(s, { kind: 'error', text: 'The checked file is no longer held (a file is kept 30 minutes after its check, and not across a restart). Choose it again.' });
            const report = await uploadSummary({ ctx: ctxOf(s), input: { bytes: held.bytes, dryRun: false, creator: s.user.displayName } });
            return resultsPage(s, { kind: 'ok', text: `Recorded ${held.name}: ${rowsText(report.rowCount)}.` }, { report, name: held.name });
          }
          const file = body.file;
          if (!(file instanceof Blob) || file.size === 0) return resultsPage(s, { kind: 'error', text: 'Choose a CSV file to check.' });
          const bytes = new Uint8Array(await file.arrayBuffer());
          const name = file instanceof File && file.name ? file.name : 'the file';
          const report = await uploadSummary({ ctx: ctxOf(s), input: { bytes, dryRun: true } });
          const id = report.rowCount > 0 ? checked.hold(s.tokenHash, { bytes, name, at: deps.clock.now() }) : null;
          return resultsPage(s, null, { report, name, checkedId: id });
        } catch (e) {
          return resultsPage(s, { kind: 'error', text: problemOf(e) });
        }
      }),
      { signedIn: true, detail: { hide: true } },
    );
}

/**
 * Files checked in the portal, held for their confirmation: one per session, 30 minutes, in memory, and at
 * most 16 at once (the oldest goes first; its user is asked to choose the file again).
 */
class CheckedFiles {
  private readonly held = new Map<string, { id: string; bytes: Uint8Array; name: string; at: number }>();
  static readonly TTL_MS = 30 * 60_000;
  static readonly MAX_HELD = 16;
  hold(session: string, file: { bytes: Uint8Array; name: string; at: number }): string {
    const id = crypto.randomUUID();
    this.held.delete(session);
    while (this.held.size >= CheckedFiles.MAX_HELD) this.held.delete(this.held.keys().next().value!);
    this.held.set(session, { id, ...file });
    return id;
  }
  take(session: string, id: string) {
    const f = this.held.get(session);
    if (!f || f.id !== id) return null;
    this.held.delete(session);
    return f;
  }
  sweep(now: number) {
    for (const [k, f] of this.held) if (now - f.at > CheckedFiles.TTL_MS) this.held.delete(k);
  }
}
