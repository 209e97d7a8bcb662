import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Child } from 'hono/jsx';
import type { Deps } from '../../../deps';
import { BANK_ACCOUNT_STATES, type BankAccountState } from '../../../../db/schema/enums';
import { OneOf } from '../../../platform/schema';
import { reportCsv, reportFilename } from '../../ach-report/csv';
import { achReport } from '../../ach-report/service';
import { getBankAccount, listBankAccounts } from '../../bank-accounts/service';
import { page, portalSession, problemOf, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { ActionButton, Choice, Facts, Notice, Pager, Table, Time, type Message } from '../ui/components';
import { confirmChange } from '../../collection/account-changes';
import { NotFound } from '../../../platform/errors';
import { count } from '../ui/format';
import { borrowerHref } from './borrowers';

// /portal/payments/bank-accounts: the lender's bank accounts as GET /v1/bank_accounts lists them (last four,
// the state its returns set and since when, the codes, the borrowers on it), filtered by state, 50 a page; a
// page per account with its borrowers; and the month's ACH report as CSV (GET /v1/reports/ach's file). Read
// through the bank-accounts service only: what its views show, the pages show.

export const BANK_ACCOUNTS_HERE = '/portal/payments/bank-accounts';
export const ACH_REPORT_CSV = '/portal/payments/ach-report.csv';
const PAGE_SIZE = 50;
/** Borrowers named in a row of the list; the account's page names the first 20 its view has. */
const ROW_BORROWERS = 3;
/** Months offered for the report: the current one and the eleven before it. */
const REPORT_MONTHS = 12;

type AccountView = Awaited<ReturnType<typeof getBankAccount>>;

/** What each state means for the lender, in words. */
const STATE_WORDS: Record<BankAccountState, string> = {
  ok: 'ok: debits go to it',
  invalid: 'invalid: closed, no account or wrong details (R02, R03, R04, R12, R13, R20); no debit to it for any borrower',
  frozen: 'frozen at the bank (R16); no debit to it for any borrower',
  unauthorized: 'unauthorized: its holder said a debit was not authorized (R05, R07, R10, R11, R29, R51); only a borrower re-sent with an authorization dated after the last return is debited again',
  deceased: 'deceased: its holder (or payee) is deceased (R14, R15); never debited again',
};

const Filters = Type.Object(
  {
    state: Type.Optional(OneOf(BANK_ACCOUNT_STATES)),
    next_page_token: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
);
type FilterValues = typeof Filters.static;

const ReportQuery = Type.Object({ month: Type.String({ maxLength: 7 }) }, { additionalProperties: false });

export const accountHref = (id: string) => `${BANK_ACCOUNTS_HERE}/${encodeURIComponent(id)}`;

const Borrower = ({ aid }: { aid: string }) => <a href={borrowerHref(aid)}>{aid}</a>;

/** The first borrowers of an account, and how many more there are. */
function FirstBorrowers({ a, shown }: { a: AccountView; shown: number }) {
  const first = a.enrollments.slice(0, shown);
  if (first.length === 0) return <>—</>;
  const more = a.enrollment_count - first.length;
  return (
    <>
      {first.map((e, i) => (
        <>
          {i > 0 ? ', ' : ''}
          <Borrower aid={e.authorizer_unique_id} />
        </>
      ))}
      {more > 0 ? ` and ${count(more)} more` : ''}
    </>
  );
}

const codes = (a: AccountView) => (a.return_codes.length ? a.return_codes.join(', ') : '—');

/** The list's columns: a column is a header and how an account's view fills it. */
const COLUMNS: [header: string, cell: (a: AccountView, now: number) => Child][] = [
  ['Account', (a) => <a href={accountHref(a.id)}>{`…${a.last4}`}</a>],
  ['State', (a) => a.state],
  ['Since', (a, now) => <Time at={a.state_since} now={now} />],
  ['Return codes', codes],
  ['Borrowers', (a) => count(a.enrollment_count)],
  ['First borrowers', (a) => <FirstBorrowers a={a} shown={ROW_BORROWERS} />],
];

/**
 * The account page's facts: a field of the view and how it reads. A field the view has and this list does not
 * (one added to the view later) is still shown, by its name, under the known ones (OtherFacts).
 */
const FACTS: [field: keyof AccountView, label: string, value: (a: AccountView, now: number) => Child][] = [
  ['last4', 'Account', (a) => `…${a.last4}`],
  ['state', 'State', (a) => STATE_WORDS[a.state] ?? a.state],
  ['state_since', 'Since', (a, now) => <Time at={a.state_since} now={now} />],
  ['return_codes', 'Return codes', codes],
  ['state_reference', 'Set by the return of', (a) => (a.state_reference ? <code>{a.state_reference}</code> : '—')],
  ['last_return_at', 'Latest return', (a, now) => <Time at={a.last_return_at} now={now} />],
  ['account_type', 'Account type', (a) => a.account_type ?? 'as the processor takes it (checking)'],
  [
    'validation',
    'Validation evidence',
    (a, now) =>
      a.validation ? (
        <>
          {a.validation.method}
          {a.validation.source ? ` (${a.validation.source})` : ''}
          {a.validation.reference ? `, ${a.validation.reference}` : ''}, <Time at={a.validation.validated_at} now={now} />
          {a.validation.current ? '' : ': older than the last change of its number, so a new validation is needed'}
        </>
      ) : (
        'none: send account_validation with the borrower, or a bank_link'
      ),
  ],
  ['number_changed_at', 'Number last corrected', (a, now) => <Time at={a.number_changed_at} now={now} />],
  ['pending_change_id', 'Debits held for a change', (a) => (a.pending_change_id ? 'yes: a Notification of Change waits to be applied (below)' : 'no')],
  ['created_at', 'First seen', (a, now) => <Time at={a.created_at} now={now} />],
  ['updated_at', 'Updated', (a, now) => <Time at={a.updated_at} now={now} />],
];
/** Fields shown elsewhere on the page: the id in the address, the borrowers in their own table. */
const SHOWN_ELSEWHERE = new Set(['id', 'enrollments', 'enrollment_count', 'changes', 'change_count']);
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** A field no row of FACTS names, as it reads: a time as a time, a list joined, anything else as its text. */
function fieldValue(v: unknown, now: number): Child {
  if (v === null || v === undefined || v === '') return '—';
  if (typeof v === 'string') return ISO_TIME.test(v) ? <Time at={v} now={now} /> : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v) && v.every((x) => typeof x !== 'object' || x === null)) return v.length ? v.join(', ') : '—';
  return <code>{JSON.stringify(v)}</code>;
}
const words = (field: string) => field.charAt(0).toUpperCase() + field.slice(1).replace(/_/g, ' ');

function facts(a: AccountView, now: number): [string, Child][] {
  const known = new Set<string>(FACTS.map(([field]) => field));
  return [
    ...FACTS.map(([, label, value]): [string, Child] => [label, value(a, now)]),
    ...Object.entries(a)
      .filter(([field]) => !known.has(field) && !SHOWN_ELSEWHERE.has(field))
      .map(([field, v]): [string, Child] => [words(field), fieldValue(v, now)]),
  ];
}

/** The months offered for the report, newest first: YYYY-MM (UTC) and how it reads. */
function reportMonths(now: number): [value: string, label: string][] {
  const d = new Date(now);
  return Array.from({ length: REPORT_MONTHS }, (_, i) => {
    const m = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - i, 1));
    return [m.toISOString().slice(0, 7), m.toLocaleString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' }) + (i === 0 ? ' (so far)' : '')];
  });
}

function ReportForm({ now }: { now: number }) {
  const months = reportMonths(now);
  return (
    <form method="get" action={ACH_REPORT_CSV} aria-label="Download the monthly ACH report">
      <label for="report-month">Month (UTC)</label>
      <select id="report-month" name="month">
        {months.map(([value, label]) => (
          <option value={value}>{label}</option>
        ))}
      </select>
      <small>
        The figures your bank asks for: debits and their total, returns by code and class with their rates, the Notifications of Change received
        and how long each took to apply, the accounts blocked. One line per figure; the same as GET /v1/reports/ach.
      </small>
      <button type="submit">Download CSV</button>
    </form>
  );
}

async function ListContent(props: { deps: Deps; s: PortalSession; f: FilterValues; now: number }) {
  const { f, now } = props;
  const list = await listBankAccounts({ ctx: { lender: props.s.lender, deps: props.deps }, input: { state: f.state, limit: PAGE_SIZE, next_page_token: f.next_page_token } });
  return (
    <>
      <form method="get" action={BANK_ACCOUNTS_HERE} aria-label="Filter bank accounts">
        <Choice id="state" name="state" label="State" values={BANK_ACCOUNT_STATES} any="All states" selected={f.state} />
        <button type="submit">Show</button>
      </form>
      <Table
        caption={`Bank accounts${f.state ? ` that are ${f.state}` : ''}, by id: a return of any borrower’s debit sets an account’s state for every borrower on it`}
        headers={COLUMNS.map(([h]) => h)}
        phone={[0, 1, 4]}
        rows={list.bank_accounts.map((a) => COLUMNS.map(([, cell]) => cell(a, now)))}
        empty={f.state ? 'No account is in this state.' : 'No bank account yet: each ACH borrower enrolled is linked to the account it is debited from.'}
      />
      <Pager path={BANK_ACCOUNTS_HERE} query={{ state: f.state }} next={list.next_page_token} />
      <h2>Monthly ACH report</h2>
      <ReportForm now={now} />
    </>
  );
}

/** What a Notification of Change's status means, in words. */
const CHANGE_STATUS_WORDS: Record<string, string> = {
  received: 'received: being applied',
  review: 'waiting for you: debits to the account are held until you apply it',
  applied: 'applied',
  recorded: 'recorded (nothing the service sends changes)',
};

function AccountContent({ a, now, csrf, message }: { a: AccountView; now: number; csrf: string; message?: Message }) {
  const more = a.enrollment_count - a.enrollments.length;
  return (
    <>
      <Notice message={message} />
      <Facts caption="The account (never its number: only its last four are kept in the clear)" rows={facts(a, now)} />
      <h2>Notifications of Change</h2>
      <Table
        caption={`${count(a.change_count)} Notification${a.change_count === 1 ? '' : 's'} of Change from the bank${a.change_count > a.changes.length ? `, the latest ${a.changes.length}` : ''}, newest first`}
        headers={['Code', 'Last four', 'Status', 'Received', 'Due by', 'Applied', '']}
        rows={a.changes.map((c) => [
          c.code,
          `…${c.old_last4} → …${c.new_last4 ?? c.old_last4}`,
          CHANGE_STATUS_WORDS[c.status] ?? c.status,
          <Time at={c.received_at} now={now} />,
          <Time at={c.due_by} now={now} />,
          c.applied_at ? (
            <>
              <Time at={c.applied_at} now={now} /> ({c.applied_by})
            </>
          ) : (
            '—'
          ),
          c.status === 'review' ? <ActionButton action={`${accountHref(a.id)}/changes/${encodeURIComponent(c.change_id)}/apply`} csrf={csrf} label={`Apply ${c.code}`} /> : '',
        ])}
        empty="No Notification of Change for this account."
      />
      <h2>Borrowers on it</h2>
      <Table
        caption={`${count(a.enrollment_count)} borrower${a.enrollment_count === 1 ? '' : 's'} on this account${more > 0 ? `, the first ${a.enrollments.length} by id` : ', by id'}`}
        headers={['Borrower']}
        rows={a.enrollments.map((e) => [<Borrower aid={e.authorizer_unique_id} />])}
        empty="No borrower is on it now (an erased or re-sent borrower is no longer linked; the account and its state stay)."
      />
      <p>
        <a href={BANK_ACCOUNTS_HERE}>All bank accounts</a>
      </p>
    </>
  );
}

export const bankAccountPages = (deps: Deps) =>
  new Elysia({ name: 'portal-bank-accounts' })
    .use(portalSession(deps))
    .get(
      BANK_ACCOUNTS_HERE,
      ({ session, query }) => {
        const view = viewOf(deps, session, BANK_ACCOUNTS_HERE);
        return page(view, 'Bank accounts', <ListContent deps={deps} s={session} f={queryOf(Filters, query)} now={view.now} />);
      },
      { signedIn: true, detail: { hide: true } },
    )
    // The router has decoded the id once; another lender's account, or none, is the API's 404 as a page.
    .get(
      `${BANK_ACCOUNTS_HERE}/:id`,
      async ({ session, params }) => {
        const view = viewOf(deps, session, BANK_ACCOUNTS_HERE);
        const a = await getBankAccount({ ctx: { lender: session.lender, deps }, input: { id: params.id } });
        return page(view, `Bank account …${a.last4}`, <AccountContent a={a} now={view.now} csrf={view.user.csrf} />);
      },
      { signedIn: true, detail: { hide: true } },
    )
    // A Notification of Change held for review, applied on the lender's word (the API's POST …/apply).
    .post(
      `${BANK_ACCOUNTS_HERE}/:id/changes/:change_id/apply`,
      async ({ session, params }) => {
        const view = viewOf(deps, session, BANK_ACCOUNTS_HERE);
        const ctx = { lender: session.lender, deps };
        let message: Message;
        let status = 200;
        try {
          const c = await confirmChange({ ctx, input: { id: params.id, changeId: params.change_id } });
          message = { kind: 'ok', text: `${c.code} applied: every borrower on the account has the corrected details.` };
        } catch (e) {
          if (e instanceof NotFound) throw e;
          message = { kind: 'error', text: problemOf(e) };
          status = 409;
        }
        const a = await getBankAccount({ ctx, input: { id: params.id } });
        return page(view, `Bank account …${a.last4}`, <AccountContent a={a} now={view.now} csrf={view.user.csrf} message={message} />, status);
      },
      { signedIn: true, detail: { hide: true } },
    )
    // The API's report as its file; a month it refuses is its 400, as a page.
    .get(
      ACH_REPORT_CSV,
      async ({ session, query }) => {
        const { month } = queryOf(ReportQuery, query);
        const report = await achReport({ ctx: { lender: session.lender, deps }, input: { month } });
        return new Response(reportCsv(report), {
          headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename=${reportFilename(report.month)}`, 'cache-control': 'no-store' },
        });
      },
      { signedIn: true, detail: { hide: true } },
    );
