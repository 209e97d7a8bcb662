import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { FRAUD_ALERT_STATES, FRAUD_DISPOSITIONS, FRAUD_RULES, type FraudAlertState, type FraudDisposition, type FraudRule } from '../../../../db/schema/enums';
import { InvalidInput, NotFound } from '../../../platform/errors';
import { OneOf } from '../../../platform/schema';
import { textSchema } from '../../../platform/fields';
import { disposeAlert, getAlert, listAlerts } from '../../fraud-monitoring/service';
import { fraudReport, reportCsv, reportFilename } from '../../fraud-monitoring/report';
import { RULES } from '../../fraud-monitoring/rules';
import { page, portalSession, problemOf, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { Choice, Csrf, Facts, Notice, Pager, Table, Time, type Message } from '../ui/components';
import { accountHref } from './bank-accounts';
import { borrowerHref } from './borrowers';

// /portal/payments/fraud-alerts: the lender's fraud-monitoring queue, as GET /v1/fraud_alerts lists it (newest
// first, by rule and state, 50 a page), open ones by default; a page per alert with what the rule compared and
// every disposition, and the form that records one (POST /v1/fraud_alerts/{id}/disposition), by the signed-in
// user; and the year's record as the CSV of GET /v1/fraud_monitoring/report. Read and written through the
// fraud-monitoring services only.

export const FRAUD_ALERTS_HERE = '/portal/payments/fraud-alerts';
export const FRAUD_REPORT_CSV = '/portal/payments/fraud-report.csv';
/** Years offered for the report: the current one and the two before it. */
const REPORT_YEARS = 3;
const ReportQuery = Type.Object({ year: Type.String({ maxLength: 4 }) }, { additionalProperties: false });
const PAGE_SIZE = 50;

export const alertHref = (id: string) => `${FRAUD_ALERTS_HERE}/${encodeURIComponent(id)}`;

type AlertView = Awaited<ReturnType<typeof getAlert>>;

const STATE_WORDS: Record<FraudAlertState, string> = {
  open: 'open: waiting for you',
  needs_info: 'needs info: you are finding out',
  cleared: 'cleared',
  confirmed_fraud: 'confirmed fraud: the account is frozen',
};

const DISPOSITION_WORDS: Record<FraudDisposition, string> = {
  cleared: 'Cleared: not fraud (a held debit goes out)',
  confirmed_fraud: 'Confirmed fraud: freeze the bank account for every borrower on it',
  needs_info: 'Needs information: keep it open (a hold stays)',
};

/** The queue's filters: open alerts by default; `all` for every state. */
const Filters = Type.Object(
  {
    rule: Type.Optional(OneOf(FRAUD_RULES)),
    state: Type.Optional(OneOf([...FRAUD_ALERT_STATES, 'all'] as const)),
    next_page_token: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
);
type FilterValues = typeof Filters.static;

const DispositionForm = Type.Object(
  {
    disposition: OneOf(FRAUD_DISPOSITIONS),
    note: Type.Optional(textSchema({ maxLength: 2000, lines: true })),
  },
  { additionalProperties: false },
);

const Borrower = ({ aid }: { aid: string | null }) => (aid === null ? <>—</> : <a href={borrowerHref(aid)}>{aid}</a>);
const Details = ({ a }: { a: AlertView }) => <>{Object.entries(a.details).map(([k, v], i) => `${i > 0 ? ', ' : ''}${k}: ${v === null ? '—' : String(v)}`)}</>;
const Holds = ({ a }: { a: AlertView }) => <>{a.holds ? <strong>holds the debits</strong> : a.action}</>;

async function QueueContent({ deps, s, f, now }: { deps: Deps; s: PortalSession; f: FilterValues; now: number }) {
  const state = f.state === 'all' ? undefined : (f.state ?? 'open');
  const r = await listAlerts({ ctx: { lender: s.lender, deps }, input: { rule: f.rule, state, limit: PAGE_SIZE, next_page_token: f.next_page_token } });
  return (
    <>
      <p>
        What the fraud-monitoring rules found (Nacha’s rule for Originators): work each alert here. A <strong>hold</strong> rule’s alert keeps the borrower’s debits until you
        clear it. The rules and their settings are the policy (<code>PUT /v1/fraud_monitoring/policy</code>); the year’s record is <code>GET /v1/fraud_monitoring/report</code>.
      </p>
      <form method="get" action={FRAUD_ALERTS_HERE}>
        <Choice id="state" name="state" label="State" values={[...FRAUD_ALERT_STATES, 'all'] as const} labels={{ ...STATE_WORDS, all: 'every state' }} selected={f.state ?? 'open'} />
        <Choice id="rule" name="rule" label="Rule" values={FRAUD_RULES} any="every rule" selected={f.rule} />
        <button type="submit">Show</button>
      </form>
      <Table
        caption={`Fraud alerts${state ? `, ${state.replace('_', ' ')}` : ''}, newest first`}
        headers={['Raised', 'Rule', 'Borrower', 'Action', 'State', 'Figures', '']}
        rows={r.alerts.map((a) => [
          <Time at={a.created_at} now={now} />,
          a.rule,
          <Borrower aid={a.authorizer_unique_id} />,
          <Holds a={a} />,
          STATE_WORDS[a.state],
          <Details a={a} />,
          <a href={alertHref(a.id)}>Work it</a>,
        ])}
        empty="No alert here."
      />
      <Pager path={FRAUD_ALERTS_HERE} query={{ rule: f.rule, state: f.state }} next={r.next_page_token} />
      <form method="get" action={FRAUD_REPORT_CSV} aria-label="Download the yearly fraud-monitoring report">
        <label for="report-year">Year (UTC)</label>
        <select id="report-year" name="year">
          {Array.from({ length: REPORT_YEARS }, (_, i) => String(new Date(now).getUTCFullYear() - i)).map((y) => (
            <option value={y}>{y}</option>
          ))}
        </select>
        <small>
          What your bank or processor asks to see: the policy versions in force, the reviews, the alerts by rule and state, the holds, the accounts frozen on confirmed
          fraud, and each month’s unauthorized return rate. One line per figure; the same as GET /v1/fraud_monitoring/report.
        </small>
        <button type="submit">Download CSV</button>
      </form>
    </>
  );
}

function AlertContent({ a, now, csrf, message }: { a: AlertView; now: number; csrf: string; message?: Message }) {
  const spec = RULES[a.rule as FraudRule];
  const final = a.state === 'cleared' || a.state === 'confirmed_fraud';
  return (
    <>
      <Notice message={message} />
      <Facts
        caption="The alert"
        rows={[
          ['Rule', `${a.rule} (version ${a.rule_version})`],
          ['What it catches', spec.catches],
          ['Why', spec.reason],
          ['Borrower', <Borrower aid={a.authorizer_unique_id} />],
          ['Bank account', a.bank_account_id === null ? '—' : <a href={accountHref(a.bank_account_id)}>{a.bank_account_id}</a>],
          ['Figures', <Details a={a} />],
          ['Action', <Holds a={a} />],
          ['State', STATE_WORDS[a.state]],
          ['Raised', <Time at={a.created_at} now={now} />],
          ['Policy version', String(a.policy_version)],
        ]}
      />
      <Table
        caption="Dispositions, oldest first (kept for good)"
        headers={['When', 'Disposition', 'Who', 'Note']}
        rows={a.dispositions.map((d) => [<Time at={d.disposed_at} now={now} />, d.disposition, d.disposed_by, d.note ?? '—'])}
        empty="None yet."
      />
      {!final && (
        <section aria-labelledby="dispose">
          <h2 id="dispose">Dispose of it</h2>
          <form method="post" action={`${alertHref(a.id)}/disposition`}>
            <Csrf token={csrf} />
            <Choice id="disposition" name="disposition" label="Disposition" values={FRAUD_DISPOSITIONS} labels={DISPOSITION_WORDS} selected="needs_info" />
            <label for="note">Note (what you found, and why)</label>
            <textarea id="note" name="note" maxlength={2000} rows={4} />
            <button type="submit">Record</button>
          </form>
        </section>
      )}
      <p>
        <a href={FRAUD_ALERTS_HERE}>The queue</a>
      </p>
    </>
  );
}

export const fraudAlertPages = (deps: Deps) =>
  new Elysia({ name: 'portal-fraud-alerts' })
    .use(portalSession(deps))
    .get(
      FRAUD_ALERTS_HERE,
      ({ session, query }) => {
        const view = viewOf(deps, session, FRAUD_ALERTS_HERE);
        return page(view, 'Fraud alerts', <QueueContent deps={deps} s={session} f={queryOf(Filters, query)} now={view.now} />);
      },
      { signedIn: true, detail: { hide: true } },
    )
    // The API's report as its file; a year it refuses is its 400, as a page.
    .get(
      FRAUD_REPORT_CSV,
      async ({ session, query }) => {
        const { year } = queryOf(ReportQuery, query);
        const report = await fraudReport({ ctx: { lender: session.lender, deps }, input: { year } });
        return new Response(reportCsv(report), {
          headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename=${reportFilename(report.year)}`, 'cache-control': 'no-store' },
        });
      },
      { signedIn: true, detail: { hide: true } },
    )
    // Another lender's alert, or none, is the API's 404 as a page.
    .get(
      `${FRAUD_ALERTS_HERE}/:id`,
      async ({ session, params }) => {
        const view = viewOf(deps, session, FRAUD_ALERTS_HERE);
        const a = await getAlert({ ctx: { lender: session.lender, deps }, input: { id: params.id } });
        return page(view, `Fraud alert: ${a.rule}`, <AlertContent a={a} now={view.now} csrf={view.user.csrf} />);
      },
      { signedIn: true, detail: { hide: true } },
    )
    // A disposition by the signed-in user (the API's POST …/disposition); a bad form is its 400 and a second final
    // one its 409, said on the page.
    .post(
      `${FRAUD_ALERTS_HERE}/:id/disposition`,
      async ({ session, params, body }) => {
        const view = viewOf(deps, session, FRAUD_ALERTS_HERE);
        const ctx = { lender: session.lender, deps };
        let message: Message;
        let status = 200;
        try {
          const raw = (body ?? {}) as Record<string, unknown>;
          const form = queryOf(DispositionForm, { disposition: typeof raw.disposition === 'string' ? raw.disposition : undefined, note: typeof raw.note === 'string' ? raw.note : undefined });
          const a = await disposeAlert({ ctx, input: { id: params.id, body: form, actor: `portal:${session.user.email}` } });
          message = { kind: 'ok', text: `Recorded: ${STATE_WORDS[a.state]}.` };
        } catch (e) {
          if (e instanceof NotFound) throw e;
          message = { kind: 'error', text: problemOf(e) };
          status = e instanceof InvalidInput ? 400 : 409;
        }
        const a = await getAlert({ ctx, input: { id: params.id } });
        return page(view, `Fraud alert: ${a.rule}`, <AlertContent a={a} now={view.now} csrf={view.user.csrf} message={message} />, status);
      },
      { signedIn: true, detail: { hide: true } },
    );
