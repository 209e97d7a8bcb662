import { Elysia } from 'elysia';
import type { Deps } from '../../../deps';
import { collectionOverview, type Totals } from '../../collection/overview';
import { page, portalSession, viewOf } from '../plugin';
import { Table } from '../ui/components';
import { DailyChart, RatesChart } from '../ui/charts';
import { count, dollars } from '../ui/format';

// /portal: the lender's collection at a glance, from the same figures as the API.

const CLASS_LABELS = { unauthorized: 'Unauthorized', administrative: 'Administrative', overall: 'Overall' } as const;

function Figure(props: { title: string; all: string; recent: string; id: string }) {
  return (
    <article aria-labelledby={props.id}>
      <h3 id={props.id}>{props.title}</h3>
      <p>{props.recent}</p>
      <small>last 30 days · {props.all} all time</small>
    </article>
  );
}

const flight = (t: Totals) => `${dollars(t.inFlight)} (${count(t.inFlightCount)})`;
const returned = (t: Totals) => `${dollars(t.returnedDebits)} (${count(t.returnedDebitCount)})`;

export const overviewPages = (deps: Deps) =>
  new Elysia({ name: 'portal-overview' }).use(portalSession(deps)).get(
    '/portal',
    ({ session }) => {
      const o = collectionOverview({ lender: session.lender, deps });
      const r = o.returnRates;
      return page(viewOf(deps, session, '/portal'), 'Overview', [
        <section aria-labelledby="money">
          <h2 id="money">Money</h2>
          <div class="figures">
            <Figure id="fig-collected" title="Collected" recent={dollars(o.last30Days.collected)} all={dollars(o.allTime.collected)} />
            <Figure id="fig-returned" title="Returned debits" recent={returned(o.last30Days)} all={returned(o.allTime)} />
            <Figure id="fig-reversed" title="Reversed" recent={dollars(o.last30Days.returned)} all={dollars(o.allTime.returned)} />
            <Figure id="fig-flight" title="In flight" recent={flight(o.last30Days)} all={flight(o.allTime)} />
          </div>
          <p>
            <small>
              Returned debits are the debits sent back by the bank, each counted once. Reversed is what the borrowers' ledgers took
              back of money already credited: a debit returned before it settled was never credited, so it reverses nothing.
            </small>
          </p>
          <DailyChart id="daily" days={o.daily} />
        </section>,
        <section aria-labelledby="rates">
          <h2 id="rates">Return rates</h2>
          {r.paused && (
            <p role="alert">
              <mark>ACH collection is paused: a return rate is at or above its threshold and the collection rules pause on a breach.</mark>
            </p>
          )}
          <RatesChart
            id="rates-chart"
            debits={r.debits}
            rates={(['unauthorized', 'administrative', 'overall'] as const).map((k) => ({ name: CLASS_LABELS[k], ...r.rates[k] }))}
          />
          <p>
            <a href="/portal/payments/rules">Collection rules and return rates</a>
          </p>
        </section>,
        <section aria-labelledby="borrowers">
          <h2 id="borrowers">Borrowers by state</h2>
          <Table
            caption="Enrolled borrowers in each state"
            headers={['State', 'Borrowers']}
            rows={Object.entries(o.borrowersByState).map(([state, n]) => [<a href={`/portal/payments/borrowers?state=${state}`}>{state}</a>, count(n)])}
          />
        </section>,
        <section aria-labelledby="payments">
          <h2 id="payments">Payments by status</h2>
          <Table caption="Payments the service made, by status" headers={['Status', 'Payments']} rows={Object.entries(o.paymentsByStatus).map(([status, n]) => [status, count(n)])} />
        </section>,
      ]);
    },
    { signedIn: true, detail: { hide: true } },
  );
