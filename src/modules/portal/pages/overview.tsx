import { Elysia } from 'elysia';
import type { Deps } from '../../../deps';
import type { Totals } from '../../collection/overview';
import { collectionOverview } from '../../collection/overview';
import { listBatches } from '../../balance-requests/service';
import { listKeys } from '../../lenders/service';
import { listConnections } from '../../payment-connections/service';
import { listEndpoints } from '../../webhooks/endpoints';
import { page, portalSession, viewOf } from '../plugin';
import type { PortalSession } from '../session';
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

interface Step {
  id: string;
  done: boolean;
  title: string;
  todo: string;
  href: string;
  link: string;
}

/** What a new lender does first, each step done or linked to where it is done, from the same services as the pages. */
async function firstSteps(deps: Deps, s: PortalSession): Promise<Step[]> {
  const ctx = { lender: s.lender, deps };
  const keys = (await listKeys(deps, s.lender.id)).filter((k) => k.revokedAt === null);
  return [
    {
      id: 'api-key',
      done: keys.some((k) => k.lastUsedAt !== null),
      title: 'Make a first API request',
      todo: 'Create an API key (or use the one the operator gave you) and send a request with it.',
      href: '/portal/developers#keys',
      link: 'API keys',
    },
    {
      id: 'processor-key',
      done: (await listConnections({ ctx })).connections.length > 0,
      title: 'Add a processor key',
      todo: 'Payments are made with your processor key (sandbox or Stripe).',
      href: '/portal/payments/connections',
      link: 'Processor keys',
    },
    {
      id: 'balance-check',
      done: (await listBatches({ ctx, input: { limit: 1, kind: 'all' } })).batches.length > 0,
      title: 'Run a first balance check',
      todo: 'Upload a balance CSV here, or send POST /v1/balance_requests.',
      href: '/portal/balance-checks',
      link: 'Balance checks',
    },
    {
      id: 'webhook-endpoint',
      done: (await listEndpoints({ ctx })).endpoints.length > 0,
      title: 'Add a webhook endpoint',
      todo: 'Your system is told of payments and blocked borrowers as they happen.',
      href: '/portal/developers#endpoints',
      link: 'Webhook endpoints',
    },
  ];
}

function Checklist(props: { steps: Step[] }) {
  const left = props.steps.filter((x) => !x.done).length;
  if (left === 0) return null;
  return (
    <section aria-labelledby="first-steps" class="checklist">
      <h2 id="first-steps">Getting started</h2>
      <p>
        {props.steps.length - left} of {props.steps.length} done.
      </p>
      <ol>
        {props.steps.map((x) => (
          <li id={`step-${x.id}`} class={x.done ? 'done' : 'todo'}>
            {x.done ? (
              <>
                <strong>{x.title}</strong> <span class="status">Done</span>
              </>
            ) : (
              <>
                <strong>{x.title}</strong> <span class="status">To do</span>: {x.todo} <a href={x.href}>{x.link}</a>
              </>
            )}
          </li>
        ))}
      </ol>
    </section>
  );
}

const flight = (t: Totals) => `${dollars(t.inFlight)} (${count(t.inFlightCount)})`;
const returned = (t: Totals) => `${dollars(t.returnedDebits)} (${count(t.returnedDebitCount)})`;

export const overviewPages = (deps: Deps) =>
  new Elysia({ name: 'portal-overview' }).use(portalSession(deps)).get(
    '/portal',
    async ({ session }) => {
      const o = await collectionOverview({ lender: session.lender, deps });
      const r = o.returnRates;
      return page(viewOf(deps, session, '/portal'), 'Overview', [
        <Checklist steps={await firstSteps(deps, session)} />,
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
