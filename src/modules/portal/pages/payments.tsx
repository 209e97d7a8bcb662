import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { PAYMENT_STATUSES } from '../../../../db/schema/enums';
import { csvLine } from '../../../platform/csv';
import { formatCents } from '../../../platform/money';
import { OneOf } from '../../../platform/schema';
import { PAYMENT_SORTS, type PaymentListInput } from '../../collection/payment-list';
import { listPayments } from '../../collection/payment-list';
import { page, portalSession, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { Choice, Money, Pager, Table, Time } from '../ui/components';
import { borrowerHref } from './borrowers';

// /portal/payments/list: the service's payments across borrowers, filtered by status and by the days they
// were created, sorted by date or amount, 50 a page, and downloaded as CSV with the same filters (streamed).

export const PAYMENTS_HERE = '/portal/payments/list';
const PAGE_SIZE = 50;
const CSV_PAGE = 500;
const SORT_LABELS = { newest: 'Newest first', oldest: 'Oldest first', amount_desc: 'Largest amount first', amount_asc: 'Smallest amount first' } as const;
const Day = Type.String({ maxLength: 10, pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD' });

const Filters = Type.Object(
  {
    status: Type.Optional(OneOf(PAYMENT_STATUSES)),
    from: Type.Optional(Day),
    to: Type.Optional(Day),
    sort: Type.Optional(OneOf(PAYMENT_SORTS)),
    next_page_token: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
);
type FilterValues = typeof Filters.static;

const inputOf = (f: FilterValues): Omit<PaymentListInput, 'limit'> => ({ status: f.status, from: f.from, to: f.to, sort: f.sort });

async function PaymentsContent(props: { deps: Deps; s: PortalSession; f: FilterValues; now: number }) {
  const { f } = props;
  const list = await listPayments({ ctx: { lender: props.s.lender, deps: props.deps }, input: { ...inputOf(f), limit: PAGE_SIZE, next_page_token: f.next_page_token } });
  const filters = { status: f.status, from: f.from, to: f.to, sort: f.sort };
  const csv = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => !!e[1]));
  const filtered = !!(f.status || f.from || f.to);
  return (
    <>
      <form method="get" action={PAYMENTS_HERE} aria-label="Filter payments">
        <div class="filters">
          <div>
            <Choice id="status" name="status" label="Status" values={PAYMENT_STATUSES} any="All statuses" selected={f.status} />
          </div>
          <div>
            <label for="from">Created from</label>
            <input id="from" name="from" type="date" value={f.from ?? ''} />
          </div>
          <div>
            <label for="to">to (included)</label>
            <input id="to" name="to" type="date" value={f.to ?? ''} />
          </div>
          <div>
            <Choice id="sort" name="sort" label="Sort" values={PAYMENT_SORTS} labels={SORT_LABELS} selected={f.sort ?? 'newest'} />
          </div>
        </div>
        <button type="submit">Show</button>
      </form>
      <p>
        <a href={`${PAYMENTS_HERE}.csv${csv.size ? `?${csv}` : ''}`} download>
          Download these payments as CSV
        </a>
      </p>
      <Table
        caption={`The service's payments${filtered ? ' matching the filters' : ''}, ${SORT_LABELS[f.sort ?? 'newest'].toLowerCase()}`}
        headers={['Amount', 'Status', 'Borrower', 'Reference', 'Rail', 'Attempt', 'Return', 'Created']}
        phone={[0, 1, 2]}
        rows={list.payments.map((p) => [
          <Money cents={p.amount_cents} />,
          p.status,
          <a href={borrowerHref(p.authorizer_unique_id)}>{p.authorizer_unique_id}</a>,
          <code>{p.reference}</code>,
          p.rail.toUpperCase(),
          String(p.attempt),
          p.return_code ?? '—',
          <Time at={p.created_at} now={props.now} />,
        ])}
        empty={filtered ? 'No payment matches.' : 'No payment yet: payments appear here once a monitored borrower’s balance covers its amount.'}
      />
      <Pager path={PAYMENTS_HERE} query={filters} next={list.next_page_token} />
    </>
  );
}

export const paymentPages = (deps: Deps) =>
  new Elysia({ name: 'portal-payments' })
    .use(portalSession(deps))
    .get(
      PAYMENTS_HERE,
      ({ session, query }) => {
        const view = viewOf(deps, session, PAYMENTS_HERE);
        return page(view, 'Payments', <PaymentsContent deps={deps} s={session} f={queryOf(Filters, query)} now={view.now} />);
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      `${PAYMENTS_HERE}.csv`,
      async ({ session, query }) => {
        const f = queryOf(Filters, query);
        const ctx = { lender: session.lender, deps };
        // The filters are checked before the first byte: a bad date is the page's error, not a broken file.
        const first = await listPayments({ ctx, input: { ...inputOf(f), limit: CSV_PAGE } });
        let token: string | null = first.next_page_token;
        let pending: Awaited<typeof first> | null = first;
        const line = (p: (typeof first)['payments'][number]) =>
          csvLine([p.reference, p.authorizer_unique_id, formatCents(p.amount_cents), p.status, p.rail, String(p.attempt), p.return_code, p.created_at, p.settled_at ?? '']);
        // Page by page as the browser reads it: any number of payments streams in bounded memory.
        const stream = new ReadableStream<string>({
          start(c) {
            c.enqueue(csvLine(['reference', 'authorizer_unique_id', 'amount', 'status', 'rail', 'attempt', 'return_code', 'created_at', 'settled_at']));
          },
          async pull(c) {
            const list = pending ?? (token ? await listPayments({ ctx, input: { ...inputOf(f), limit: CSV_PAGE, next_page_token: token } }) : null);
            pending = null;
            if (!list) return c.close();
            c.enqueue(list.payments.map(line).join(''));
            token = list.next_page_token;
            if (!token) c.close();
          },
        });
        return new Response(stream.pipeThrough(new TextEncoderStream()), {
          headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': 'attachment; filename=payments.csv', 'cache-control': 'no-store' },
        });
      },
      { signedIn: true, detail: { hide: true } },
    );
