import { Elysia } from 'elysia';
import type { Child } from 'hono/jsx';
import type { LinkHealth } from '../../../../db/schema/enums';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { MONITOR_STATES } from '../../../../db/schema/enums';
import { csvLine } from '../../../platform/csv';
import { validated } from '../../../platform/validation';
import { formatCents } from '../../../platform/money';
import { listPaymentEvents } from '../../collection/events';
import { BLOCKED_REASONS, type BlockedReason } from '../../enrollments/monitor';
import { eraseBorrowers, getEnrollment, listEnrollments, removeEnrollments } from '../../enrollments/service';
import { page, portalSession, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { ActionButton, Choice, Confirm, Facts, Money, Notice, Pager, Table, Time, type Message, type View } from '../ui/components';
import { readBorrowerNow } from '../../enrollments/read-now';
import { resendBorrower } from '../../enrollments/resend';
import { parseDollarText } from '../../../platform/money';
import { formOf } from '../plugin';
import { Csrf } from '../ui/components';
import { searchBorrowers, SEARCH_LIMIT, type SearchKind } from '../../enrollments/search';
import { problemOf } from '../plugin';
import { dateWords, dollars } from '../ui/format';
import { NOTICE_CHANNELS, type NoticeClass } from '../../../../db/schema/enums';
import { getPolicy } from '../../collection-policy/service';
import { recordPaymentNotice } from '../../collection/authorizations';
import { NoticeSentBody } from '../../collection/model';
import { Conflict } from '../../../platform/errors';
import { electionWords, NOTICE_CLASS_WORDS, NOTICE_NEED_WORDS } from '../ui/notices';

/** What each blocked reason asks of the lender, in words. */
const BLOCKED_WHY: Record<BlockedReason, string> = {
  no_processor_key: 'no processor key takes this rail; add one and the next read uses it',
  verification_required: 'the processor wants the bank account verified; re-send the borrower with a verified token',
  reauthorization_required: 'the borrower must authorize again; re-send with a later authorization.obtained_at (not read until then)',
  reinitiation_limit: "this debt's presentments are used up; only a new authorization starts a new chain (not read until then)",
  reinitiation_window: 'more than 180 days since the original debit; only a new authorization allows another (not read until then)',
  amount_changed: 'the collectable amount is below the returned debit; re-send with the amount or a new authorization',
  return_rate_paused: 'ACH collection is paused while a return rate is over its threshold; it resumes by itself',
  late_return_window: 'the last payment settled and may still be returned late; the next debit waits until its window passes, by itself',
  stale_balance: "the linked account's balance is older than the policy allows; a fresher read lifts it, by itself",
  current_only: 'the linked account gives only a current balance, which the policy does not debit on; a read with an available balance lifts it',
  account_revoked: 'the borrower revoked the linked account or the permission to it; no debit until the provider says it is well again',
  account_closed: 'the linked account is closed at the bank; no debit until the provider says it is open again',
  account_not_transactable: "the linked account's account number cannot be debited; no debit until the provider says it can",
  account_invalid: 'a return said the bank account is closed or invalid, for every borrower on it; no debit to it (not read until then)',
  account_frozen: 'a return said the bank account is frozen, for every borrower on it; no debit to it (not read until then)',
  account_unauthorized: "a return said the account's holder did not authorize a debit; re-send with an authorization.obtained_at after that return (not read until then)",
  account_deceased: "a return said the bank account's holder is deceased; no debit to it (not read until then)",
  account_change_pending: 'a Notification of Change on the bank account waits to be applied; under the policy’s review, apply it on the Bank accounts page (not read until then)',
  authorization_revoked: 'the borrower revoked its authorization; no debit until a new one dated after it is sent with the borrower (not read until then)',
  validation_required: 'the bank account has no validation evidence since its number last changed; re-send the borrower with account_validation or a bank_link (not read until then)',
  fraud_hold: 'a fraud-monitoring alert of a hold rule keeps this borrower’s debits; clear or confirm it on the Fraud alerts page (reads go on)',
};

/** A linked account's health, in words (balance-requests/link-health.ts). */
const LINK_HEALTH_WORDS: Record<LinkHealth, string> = {
  ok: 'ok',
  relink_required: 'the borrower must link it again (checked hourly, then daily; read again by itself once repaired)',
  expiring: 'consent ends soon (still read)',
  revoked: 'revoked by the borrower: no debit',
  closed: 'closed at the bank: no debit',
  not_transactable: 'its account number cannot be debited: no debit',
};

// /portal/payments/borrowers: the enrolled borrowers, searched by a prefix of authorizer_unique_id, filtered by
// state and blocked reason, paged, and downloaded as CSV; a borrower's page with its payments, events and
// ledger, the notice its scheduled payment waits for (confirmed here as by POST /v1/payments/{id}/notice), its
// new authorization and Regulation E election, and removal and erasure after a confirmation. The same services
// as /v1/payment_enrollments.

const HERE = '/portal/payments/borrowers';
const PAGE_SIZE = 50;
const CSV_PAGE = 500;

const Filters = Type.Object(
  {
    q: Type.Optional(Type.String({ maxLength: 255 })),
    find: Type.Optional(Type.String({ maxLength: 255 })),
    state: Type.Optional(Type.Union(MONITOR_STATES.map((x) => Type.Literal(x)))),
    blocked: Type.Optional(Type.Union(BLOCKED_REASONS.map((x) => Type.Literal(x)))),
    next_page_token: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
);
type FilterValues = typeof Filters.static;


const listInput = (f: FilterValues) => ({ prefix: f.q, state: f.state, blockedReason: f.blocked });

type Action = 'remove' | 'erase' | 'read' | 'resend' | 'amount' | 'notice';
const AmountForm = Type.Object({ amount: Type.String({ minLength: 1, maxLength: 20 }) });
const dollarsOf = (cents: number) => dollars(cents);
// A borrower named by its id alone, in the query: for the ids a path cannot carry (below).
const BY_QUERY = '/portal/payments/borrower';
const ById = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });
// Taken as sent (no trimming: a space at an end is part of an id).
const idOf = (query: Record<string, string | undefined>) => validated(ById, { id: query.id }).id;

/**
 * The address of a borrower's page or of one of its actions. The id is one path segment, percent-encoded here
 * and decoded once by the router, never again: whatever characters it has (`%`, `/`, `?`, `#`, spaces), the
 * page and its actions name exactly that borrower. An id of only dots (`.` or `..`) would be a dot segment,
 * which browsers and URL parsers remove, so its pages take the id from the query instead.
 */
export const borrowerHref = (aid: string, action?: Action) =>
  aid === '.' || aid === '..'
    ? `${BY_QUERY}${action ? `/${action}` : ''}?id=${encodeURIComponent(aid)}`
    : `${HERE}/${encodeURIComponent(aid)}${action ? `/${action}` : ''}`;

const MATCHED_BY: Record<SearchKind, string> = { name: 'name', phone: 'phone', last4: 'last four', reference: 'payment reference', id: 'id' };

/** Borrowers found by name, phone, last four, payment reference or the start of their id. */
async function FindContent(props: { deps: Deps; s: PortalSession; find: string }) {
  const ctx = { lender: props.s.lender, deps: props.deps };
  const r = await searchBorrowers({ ctx, input: { q: props.find } });
  const rows = [];
  for (const m of r.matches) rows.push({ m, e: await getEnrollment({ ctx, input: { authorizerUniqueId: m.authorizer_unique_id } }) });
  return (
    <>
      <Table
        caption={`Borrowers found for “${props.find}”`}
        headers={['Borrower', 'State', 'Collectable', 'Matched by', 'Last balance']}
        rows={rows.map(({ m, e }) => [
          <a href={borrowerHref(e.authorizer_unique_id)}>{e.authorizer_unique_id}</a>,
          e.state,
          <Money cents={e.collectable_amount} />,
          m.matched_by.map((k) => MATCHED_BY[k]).join(', '),
          e.last_read ? <Money cents={e.last_read.balance_cents} /> : '—',
        ])}
        empty="No borrower found. Names match whole (a first name, a last name, or both); phones by their last ten digits; last four and references exactly or by their start."
      />
      {r.more ? <p>More than {SEARCH_LIMIT} borrowers match: the first {SEARCH_LIMIT} by id are shown. Narrow the search.</p> : null}
      <p>
        <a href={HERE}>All borrowers</a>
      </p>
    </>
  );
}

const FindForm = (props: { find?: string }) => (
  <form method="get" action={HERE} role="search" aria-label="Find a borrower">
    <label for="find">Name, phone, last four or payment reference</label>
    <input id="find" name="find" type="search" value={props.find ?? ''} maxlength={255} />
    <button type="submit">Find</button>
  </form>
);

async function ListContent(props: { deps: Deps; s: PortalSession; f: FilterValues }) {
  const { f } = props;
  if (f.find) {
    return (
      <>
        <FindForm find={f.find} />
        <FindContent deps={props.deps} s={props.s} find={f.find} />
      </>
    );
  }
  const list = await listEnrollments({ ctx: { lender: props.s.lender, deps: props.deps }, input: { ...listInput(f), limit: PAGE_SIZE, next_page_token: f.next_page_token } });
  const filters = { q: f.q, state: f.state, blocked: f.blocked };
  const csv = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => !!e[1]));
  return (
    <>
      <FindForm find={f.find} />
      <form method="get" action={HERE} aria-label="Filter borrowers">
        <label for="q">Authorizer id starts with</label>
        <input id="q" name="q" type="search" value={f.q ?? ''} maxlength={255} />
        <Choice id="state" name="state" label="State" values={MONITOR_STATES} any="All states" selected={f.state} />
        <Choice id="blocked" name="blocked" label="Blocked reason" values={BLOCKED_REASONS} any="Any or none" selected={f.blocked} />
        <button type="submit">Search</button>
      </form>
      <p>
        <a href={`${HERE}.csv${csv.size ? `?${csv}` : ''}`} download>
          Download these borrowers as CSV
        </a>
      </p>
      <Table
        caption={`Enrolled borrowers${f.q || f.state || f.blocked ? ' matching the search' : ''}, by authorizer id`}
        headers={['Borrower', 'State', 'Blocked', 'Collectable', 'Last balance', 'Payments', 'Collected (net)']}
        phone={[0, 1, 3]}
        rows={list.enrollments.map((e) => [
          <a href={borrowerHref(e.authorizer_unique_id)}>{e.authorizer_unique_id}</a>,
          // Why a borrower is stopped or held is said where it is listed, not only on its page.
          e.reason ? `${e.state}: ${e.reason}` : e.state,
          e.blocked_reason ?? '—',
          <Money cents={e.collectable_amount} />,
          e.last_read ? <Money cents={e.last_read.balance_cents} /> : '—',
          String(e.payments_used),
          <Money cents={e.ledger.net} />,
        ])}
        empty={f.q || f.state || f.blocked ? 'No borrower matches.' : 'No borrower enrolled yet.'}
      />
      <Pager path={HERE} query={filters} next={list.next_page_token} />
    </>
  );
}

/** The latest consumer-rights notice (12 CFR 1041.9(c)): when it is due, overdue, or when and how it was sent. */
function RightsNoticeFact({ notice: n, now }: { notice: Awaited<ReturnType<typeof getEnrollment>>['rights_notice']; now: number }) {
  if (!n) return <>none due</>;
  if (n.sent_at) return <>sent <Time at={n.sent_at} now={now} /> by {n.channel}{n.evidence_ref ? ` (${n.evidence_ref})` : ''}</>;
  return <>{n.overdue ? <strong>overdue: was due</strong> : 'due'} by <Time at={n.due_by} now={now} />, not sent yet</>;
}

type Enrollment = Awaited<ReturnType<typeof getEnrollment>>;

const classWords = (k: string | null) => (k === null ? 'not classified (made before classes were kept)' : (NOTICE_CLASS_WORDS[k as NoticeClass] ?? k));

/** A form's time as an instant: `YYYY-MM-DDTHH:MM[:SS]` (a datetime-local field, read as UTC, as the portal shows times) or a full date-time. */
const formInstant = (v: string) => (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/.test(v) ? `${v.length === 16 ? `${v}:00` : v}Z` : v);
/** An instant as a datetime-local field's value, to the second, in UTC. */
const fieldTime = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19);

/**
 * The notice a scheduled payment waits for (docs/payments.md, Payment notices): its class, what asks for it,
 * its window in words, whether it was sent; overdue once its window has passed unsent (the next read voids the
 * payment). With the form to confirm it while it can still be confirmed.
 */
function ScheduledNotice(props: { e: Enrollment; channel: (typeof NOTICE_CHANNELS)[number] | null; view: View }) {
  const s = props.e.scheduled_payment;
  const now = props.view.now;
  if (!s) return null;
  const n = s.notice;
  const dueBy = n?.due_by ? Date.parse(n.due_by) : null;
  const overdue = n !== null && n.sent_at === null && dueBy !== null && dueBy < now;
  const window = !n ? (
    'none: only the notice period of the rules (notice_days)'
  ) : (
    <>
      send it {n.due_from ? <>no earlier than <Time at={n.due_from} now={now} /> and </> : null}no later than <Time at={n.due_by} now={now} />, for a
      debit on {s.debit_on}
      {n.requirements.includes('cfpb') && props.channel ? ` (the window of ${props.channel === 'electronic' ? 'an electronic' : 'a mailed'} notice; the other channel’s differs)` : ''}
    </>
  );
  const sent = !n ? (
    '—'
  ) : n.sent_at ? (
    <>
      sent <Time at={n.sent_at} now={now} />: the payment goes out on its day if nothing else stops it
    </>
  ) : overdue ? (
    <>
      <strong>overdue</strong>: its window closed <Time at={n.due_by} now={now} /> and no notice was confirmed; the next read voids the payment (no money moves) and plans
      another with a window of its own
    </>
  ) : (
    'not sent yet: the payment does not go out until it is confirmed here or through POST /v1/payments/{payment_id}/notice'
  );
  return (
    <section aria-labelledby="payment-notice">
      <h2 id="payment-notice">Payment notice</h2>
      <Facts
        caption={`The notice the scheduled payment ${s.reference} waits for`}
        rows={[
          ['Payment', <><Money cents={s.amount} /> on {s.debit_on} (<code>{s.reference}</code>)</>],
          ['Class', classWords(s.notice_class)],
          ['What asks for it', n ? (n.requirements.length ? n.requirements.map((r) => NOTICE_NEED_WORDS[r] ?? r).join('; ') : 'nothing') : 'no notice'],
          ['Window', window],
          ['Sent', sent],
        ]}
      />
      {n && n.sent_at === null && !overdue ? (
        <form method="post" action={borrowerHref(props.e.authorizer_unique_id, 'notice')} aria-label="Confirm the payment notice was sent">
          <Csrf token={props.view.user.csrf} />
          <input type="hidden" name="payment_id" value={s.payment_id} />
          <label for="sent_at">Sent at (UTC)</label>
          <input id="sent_at" name="sent_at" type="datetime-local" step={1} required value={fieldTime(now)} aria-describedby="sent_at-help" />
          <small id="sent_at-help">When the notice went out: not in the future, and inside its window for the channel it went by.</small>
          <label for="notice_channel">Sent by</label>
          <select id="notice_channel" name="channel">
            {NOTICE_CHANNELS.map((c) => (
              <option value={c} selected={(props.channel ?? 'electronic') === c}>
                {c === 'electronic' ? 'electronic' : 'mail'}
              </option>
            ))}
          </select>
          <label for="evidence_ref">Your reference to its copy (optional)</label>
          <input id="evidence_ref" name="evidence_ref" type="text" maxlength={200} />
          <button type="submit">Confirm notice sent</button>
        </form>
      ) : null}
    </section>
  );
}

/** The borrower's new authorization under the payday rule (12 CFR 1041.8(c)): what was obtained, and its transfers. */
function Reauthorization({ a, now }: { a: NonNullable<Enrollment['reauthorization']>; now: number }) {
  return (
    <section aria-labelledby="reauthorization">
      <h2 id="reauthorization">New authorization</h2>
      <Facts
        caption="Recorded under the payday rule: while covered, debits go only on its dates, within its amounts and channel"
        rows={[
          ['Obtained', <Time at={a.obtained_at} now={now} />],
          ['Method', a.method],
          ['Evidence', a.evidence_ref],
          ...(a.fee_max_amount_cents !== undefined ? ([['Fee maximum (recorded; no fee is debited)', <Money cents={a.fee_max_amount_cents} />]] as [string, Child][]) : []),
          ['Recorded', <Time at={a.recorded_at} now={now} />],
        ]}
      />
      <Table
        caption="Its transfers: the days a debit may go out, the most each may be, and its channel"
        headers={['Date', 'At most', 'Channel']}
        rows={a.transfers.map((t) => [t.date, <Money cents={t.max_amount_cents} />, t.channel])}
        empty="No transfer named."
      />
    </section>
  );
}

async function BorrowerContent(props: { deps: Deps; s: PortalSession; view: View; aid: string; message?: Message }) {
  const ctx = { lender: props.s.lender, deps: props.deps };
  const e = await getEnrollment({ ctx, input: { authorizerUniqueId: props.aid } });
  const events = (await listPaymentEvents({ ctx, input: { authorizerUniqueId: e.authorizer_unique_id } })).events;
  const policy = await getPolicy({ ctx });
  const now = props.view.now;
  const instrument = `${e.instrument.rail.toUpperCase()} ${'bank_name' in e.instrument ? (e.instrument.bank_name ?? '') : (e.instrument.card_brand ?? '')} …${e.instrument.last4 ?? ''}`;
  return (
    <>
      <Notice message={props.message} />
      <Facts
        caption="Monitoring"
        rows={[
          ['State', e.state + (e.reason ? ` (${e.reason})` : '')],
          ['Blocked', e.blocked_reason ? `${e.blocked_reason}: ${BLOCKED_WHY[e.blocked_reason as BlockedReason] ?? ''}` : '—'],
          ['Window', <><Time at={e.window_started_at} now={now} /> to <Time at={e.window_ends_at} now={now} /></>],
          ['Collectable', <Money cents={e.collectable_amount} />],
          ['Instrument', instrument],
          ['Last balance', e.last_read ? <><Money cents={e.last_read.balance_cents} /> at <Time at={e.last_read.at} now={now} /></> : 'not read yet'],
          [
            'Linked account',
            e.bank_link ? (
              <>
                {e.bank_link.provider} {e.bank_link.account_last4 ?? e.bank_link.account ?? ''}: {LINK_HEALTH_WORDS[e.bank_link.health.status]}
                {e.bank_link.health.since ? <> since <Time at={e.bank_link.health.since} now={now} /></> : null}
                {e.bank_link.health.expires_at ? <> (consent ends <Time at={e.bank_link.health.expires_at} now={now} />)</> : null}
              </>
            ) : (
              'none'
            ),
          ],
          ['Next read', <Time at={e.next_read_at} now={now} />],
          [
            'Pay cycle',
            e.pay_cycle
              ? `${e.pay_cycle.frequency}${e.pay_cycle.next_payday ? `, next payday ${e.pay_cycle.next_payday}` : ''} (confidence ${Math.round(e.pay_cycle.confidence * 100)}%, from ${e.pay_cycle.source})`
              : 'not learned yet',
          ],
          ['Presentments of this debt', `${e.payments_used} of 3`],
          [
            'Scheduled payment',
            e.scheduled_payment ? (
              <>
                <Money cents={e.scheduled_payment.amount} /> on {e.scheduled_payment.debit_on} ({e.scheduled_payment.reference}){e.scheduled_payment.notice && !e.scheduled_payment.notice.sent_at ? ', waiting for its notice' : ''}
              </>
            ) : (
              'none'
            ),
          ],
          ['Consumer-rights notice', <RightsNoticeFact notice={e.rights_notice} now={now} />],
          ['New authorization', e.reauthorization ? <>obtained <Time at={e.reauthorization.obtained_at} now={now} /> ({e.reauthorization.transfers.length} transfers)</> : 'none recorded'],
          ['Regulation E election', e.reg_e_election ? electionWords(e.reg_e_election) : `policy default (${electionWords(policy.reg_e_election)})`],
        ]}
      />
      <ScheduledNotice e={e} channel={policy.notice_channel} view={props.view} />
      {e.reauthorization ? <Reauthorization a={e.reauthorization} now={now} /> : null}
      <h2>Payments</h2>
      <Table
        caption="The service's payments, oldest first; attempt 2 and 3 are reinitiations; the class is the notice the rules asked of each debit (first, unusual, reinitiation, regular, consumer_initiated)"
        headers={['Reference', 'Amount', 'Status', 'Class', 'Attempt', 'Reinitiation of', 'Created']}
        phone={[0, 1, 2]}
        rows={e.payments.map((p) => [<code>{p.reference}</code>, <Money cents={p.amount} />, p.status, p.notice_class ?? '—', String(p.attempt), p.reinitiation_of ?? '—', <Time at={p.created_at} now={now} />])}
      />
      <h2>Payment events</h2>
      <Table
        caption="Oldest first"
        headers={['When', 'Reference', 'Status', 'Amount', 'Return code', 'Source']}
        rows={events.map((x) => [<Time at={x.occurred_at} now={now} />, <code>{x.reference}</code>, x.status, <Money cents={x.amount} />, ('return_code' in x ? x.return_code : null) ?? '—', x.source])}
      />
      <h2>Ledger</h2>
      <Table
        caption={`Collected ${dollars(e.ledger.collected)}, reversed ${dollars(e.ledger.reversed)}, net ${dollars(e.ledger.net)}`}
        headers={['When', 'Reference', 'Kind', 'Amount']}
        rows={e.ledger.entries
          // A return of a debit never credited reverses nothing: it is not a line of the ledger here.
          .filter((x) => !(x.kind === 'reversal' && x.amount === 0))
          .map((x) => [<Time at={x.at} now={now} />, <code>{x.reference}</code>, x.kind, <Money cents={x.amount} />])}
      />
      <h2>Actions</h2>
      {e.state === 'monitored' ? (
        <ActionButton action={borrowerHref(e.authorizer_unique_id, 'read')} csrf={props.view.user.csrf} label="Read balance now" />
      ) : null}
      {e.state === 'removed' || e.state === 'lapsed' ? (
        <>
          <p>Re-sending enrolls the borrower again with what is stored of it, as the API's POST /v1/payment_enrollments would: monitoring resumes.</p>
          <ActionButton action={borrowerHref(e.authorizer_unique_id, 'resend')} csrf={props.view.user.csrf} label="Re-send to collection" />
        </>
      ) : null}
      {e.state !== 'stopped' ? (
        <form method="post" action={borrowerHref(e.authorizer_unique_id, 'amount')} aria-label="Change the collectable amount">
          <Csrf token={props.view.user.csrf} />
          <label for="amount">Collectable amount, in dollars</label>
          <input id="amount" name="amount" inputmode="decimal" required value={formatCents(e.collectable_amount)} maxlength={20} />
          <small>The borrower is re-sent with this amount (POST /v1/payment_enrollments): no single payment exceeds it.</small>
          <button type="submit">Change amount</button>
        </form>
      ) : null}
      <p>
        {e.state === 'monitored' ? <a href={borrowerHref(e.authorizer_unique_id, 'remove')}>Remove from collection</a> : 'Not monitored: nothing to remove.'}
        {' · '}
        <a href={borrowerHref(e.authorizer_unique_id, 'erase')}>Erase personal data</a>
      </p>
      <p>
        <a href={HERE}>All borrowers</a>
      </p>
    </>
  );
}

const ACTIONS = {
  remove: {
    title: 'Remove a borrower',
    what: 'Monitoring stops and no new payment is made for this borrower; a scheduled payment is voided; a payment already sent keeps its course at the processor.',
    button: 'Remove borrower',
  },
  erase: {
    title: 'Erase personal data',
    what: 'Monitoring stops as on removal, and the borrower’s personal data and card token are overwritten; its payments, events and ledger stay. This cannot be undone.',
    button: 'Erase personal data',
  },
} as const;

export const borrowerPages = (deps: Deps) => {
  const show = (s: PortalSession, aid: string, message?: Message, status = 200) => {
    const view = viewOf(deps, s, HERE);
    return page(view, `Borrower ${aid}`, <BorrowerContent deps={deps} s={s} view={view} aid={aid} message={message} />, status);
  };
  const app = new Elysia({ name: 'portal-borrowers' })
    .use(portalSession(deps))
    .get(
      HERE,
      ({ session, query }) => {
        const view = viewOf(deps, session, HERE);
        return page(view, 'Borrowers', <ListContent deps={deps} s={session} f={queryOf(Filters, query)} />);
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      `${HERE}.csv`,
      ({ session, query }) => {
        const f = queryOf(Filters, query);
        const ctx = { lender: session.lender, deps };
        let token: string | undefined;
        let done = false;
        // Page by page as the browser reads it: a list of any length streams in bounded memory.
        const stream = new ReadableStream<string>({
          start(c) {
            c.enqueue(csvLine(['authorizer_unique_id', 'state', 'reason', 'blocked_reason', 'collectable_amount', 'last_balance', 'last_read_at', 'payments_used', 'collected', 'reversed', 'net']));
          },
          async pull(c) {
            if (done) return c.close();
            const list = await listEnrollments({ ctx, input: { ...listInput(f), limit: CSV_PAGE, next_page_token: token } });
            c.enqueue(
              list.enrollments
                .map((e) =>
                  csvLine([
                    e.authorizer_unique_id,
                    e.state,
                    e.reason,
                    e.blocked_reason,
                    formatCents(e.collectable_amount),
                    e.last_read?.balance_cents == null ? '' : formatCents(e.last_read.balance_cents),
                    e.last_read?.at ?? '',
                    String(e.payments_used),
                    formatCents(e.ledger.collected),
                    formatCents(e.ledger.reversed),
                    formatCents(e.ledger.net),
                  ]),
                )
                .join(''),
            );
            token = list.next_page_token ?? undefined;
            if (!token) done = true;
          },
        });
        return new Response(stream.pipeThrough(new TextEncoderStream()), {
          headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': 'attachment; filename=borrowers.csv', 'cache-control': 'no-store' },
        });
      },
      { signedIn: true, detail: { hide: true } },
    )
    // The router has decoded the id once; it is used as it is.
    .get(`${HERE}/:aid`, ({ session, params }) => show(session, params.aid), { signedIn: true, detail: { hide: true } })
    .get(BY_QUERY, ({ session, query }) => show(session, idOf(query)), { signedIn: true, detail: { hide: true } });
  const confirm = async (session: PortalSession, aid: string, action: 'remove' | 'erase') => {
    const a = ACTIONS[action];
    const e = await getEnrollment({ ctx: { lender: session.lender, deps }, input: { authorizerUniqueId: aid } });
    const view = viewOf(deps, session, HERE);
    return page(
      view,
      a.title,
      <Confirm
        question={
          <>
            {a.title} <strong>{e.authorizer_unique_id}</strong>? {a.what}
          </>
        }
        action={borrowerHref(e.authorizer_unique_id, action)}
        csrf={view.user.csrf}
        label={a.button}
        cancel={borrowerHref(e.authorizer_unique_id)}
      />,
    );
  };
  const act = async (session: PortalSession, aid: string, action: 'remove' | 'erase') => {
    const ctx = { lender: session.lender, deps };
    await getEnrollment({ ctx, input: { authorizerUniqueId: aid } });
    if (action === 'remove') {
      const r = await removeEnrollments({ ctx, input: { body: { authorizer_unique_ids: [aid] } } });
      return show(session, aid, r.removed ? { kind: 'ok', text: 'Removed: no new payment is made for this borrower.' } : { kind: 'error', text: 'Not removed: the borrower is not monitored.' });
    }
    await eraseBorrowers({ ctx, input: { body: { authorizer_unique_ids: [aid] } } });
    return show(session, aid, { kind: 'ok', text: 'Personal data erased; monitoring stopped.' });
  };
  // Reading now changes no money and needs no confirmation: the button posts, the page says what was queued.
  const readNow = async (session: PortalSession, aid: string) => {
    const ctx = { lender: session.lender, deps };
    try {
      const r = await readBorrowerNow({ ctx, input: { authorizerUniqueId: aid } });
      return show(session, aid, { kind: 'ok', text: `Balance read queued (batch ${r.batch_id}); the result shows here as the last balance in a moment. The next regular read follows one interval after it.` });
    } catch (err) {
      return show(session, aid, { kind: 'error', text: `Not read: ${problemOf(err)}` });
    }
  };
  // Re-sent through the enrollment service: every rule of an enrollment applies, and its result is shown.
  const resend = async (session: PortalSession, aid: string, body: unknown, withAmount: boolean) => {
    const ctx = { lender: session.lender, deps };
    let collectableAmount: number | undefined;
    if (withAmount) {
      const cents = parseDollarText(formOf(AmountForm, body).amount);
      if (cents === null || cents <= 0) return show(session, aid, { kind: 'error', text: 'Not changed: the amount must be dollars above zero with at most two decimals, such as 425.00.' });
      collectableAmount = cents;
    }
    try {
      const r = await resendBorrower({ ctx, input: { authorizerUniqueId: aid, collectableAmount } });
      if (r.outcome === 'failed') return show(session, aid, { kind: 'error', text: `Not re-sent: ${r.message ?? r.reason ?? 'refused'}` });
      const what = withAmount ? `Collectable amount changed to ${dollarsOf(collectableAmount!)}` : 'Re-sent';
      return show(session, aid, { kind: 'ok', text: `${what}: the borrower is ${r.outcome}${r.message ? ` (${r.message})` : ''}.` });
    } catch (err) {
      return show(session, aid, { kind: 'error', text: `Not re-sent: ${problemOf(err)}` });
    }
  };
  // The lender confirms a scheduled payment's notice was sent: recorded by the same service as POST
  // /v1/payments/{id}/notice, for the payment this borrower's page showed (one replanned since is refused).
  const confirmNotice = async (session: PortalSession, aid: string, body: unknown) => {
    const ctx = { lender: session.lender, deps };
    const raw = (body ?? {}) as Record<string, unknown>;
    try {
      const e = await getEnrollment({ ctx, input: { authorizerUniqueId: aid } });
      const paymentId = typeof raw.payment_id === 'string' ? raw.payment_id : '';
      if (!e.scheduled_payment || e.scheduled_payment.payment_id !== paymentId) {
        return show(session, aid, { kind: 'error', text: 'Not confirmed: the borrower’s scheduled payment is no longer the one the form was for. Its current one is shown below.' }, 409);
      }
      const evidence = typeof raw.evidence_ref === 'string' ? raw.evidence_ref.trim() : '';
      const input = formOf(NoticeSentBody, {
        sent_at: typeof raw.sent_at === 'string' ? formInstant(raw.sent_at.trim()) : raw.sent_at,
        channel: raw.channel,
        ...(evidence ? { evidence_ref: evidence } : {}),
      });
      const r = await recordPaymentNotice({ ctx, input: { paymentId, body: input } });
      const sentAt = Date.parse(input.sent_at);
      return show(session, aid, { kind: 'ok', text: `Notice confirmed: sent ${dateWords(sentAt)} by ${r.notice_sent_channel}. The payment goes out on ${r.debit_on} if nothing else stops it.` });
    } catch (err) {
      return show(session, aid, { kind: 'error', text: `Not confirmed: ${problemOf(err)}` }, err instanceof Conflict ? 409 : 400);
    }
  };
  app
    .post(`${HERE}/:aid/notice`, ({ session, params, body }) => confirmNotice(session, params.aid, body), { signedIn: true, detail: { hide: true } })
    .post(`${BY_QUERY}/notice`, ({ session, query, body }) => confirmNotice(session, idOf(query), body), { signedIn: true, detail: { hide: true } })
    .post(`${HERE}/:aid/resend`, ({ session, params, body }) => resend(session, params.aid, body, false), { signedIn: true, detail: { hide: true } })
    .post(`${HERE}/:aid/amount`, ({ session, params, body }) => resend(session, params.aid, body, true), { signedIn: true, detail: { hide: true } })
    .post(`${BY_QUERY}/resend`, ({ session, query, body }) => resend(session, idOf(query), body, false), { signedIn: true, detail: { hide: true } })
    .post(`${BY_QUERY}/amount`, ({ session, query, body }) => resend(session, idOf(query), body, true), { signedIn: true, detail: { hide: true } })
    .post(`${HERE}/:aid/read`, ({ session, params }) => readNow(session, params.aid), { signedIn: true, detail: { hide: true } })
    .post(`${BY_QUERY}/read`, ({ session, query }) => readNow(session, idOf(query)), { signedIn: true, detail: { hide: true } });
  for (const action of ['remove', 'erase'] as const) {
    app
      .get(`${HERE}/:aid/${action}`, ({ session, params }) => confirm(session, params.aid, action), { signedIn: true, detail: { hide: true } })
      .post(`${HERE}/:aid/${action}`, ({ session, params }) => act(session, params.aid, action), { signedIn: true, detail: { hide: true } })
      .get(`${BY_QUERY}/${action}`, ({ session, query }) => confirm(session, idOf(query), action), { signedIn: true, detail: { hide: true } })
      .post(`${BY_QUERY}/${action}`, ({ session, query }) => act(session, idOf(query), action), { signedIn: true, detail: { hide: true } });
  }
  return app;
};
