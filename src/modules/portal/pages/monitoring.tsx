import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { SCHEDULE_STATUSES } from '../../../../db/schema/enums';
import { OneOf } from '../../../platform/schema';
import { getSchedule, listSchedules, view as scheduleView } from '../../schedules/service';
import { runScheduleNow } from '../../schedules/run-now';
import { page, portalSession, problemOf, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { ActionButton, Choice, Facts, Notice, Pager, Table, Time, type Message } from '../ui/components';
import { count, dollarAmount } from '../ui/format';

// /portal/monitoring: the lender's balance-monitoring schedules (GET /v1/monitoring/schedules), filtered by status and
// paged, and one schedule's settings.

const HERE = '/portal/monitoring';
const STATUS_LABELS = { ACTIVE: 'Active', COMPLETED: 'Completed', DISABLED: 'Disabled' } as const;
const Filters = Type.Object({ status: Type.Optional(OneOf(SCHEDULE_STATUSES)), next_page_token: Type.Optional(Type.String({ maxLength: 512 })) }, { additionalProperties: false });

const every = (x: { interval_days: number; time_of_day: string }) => `every ${x.interval_days} day${x.interval_days === 1 ? '' : 's'} at ${x.time_of_day} UTC`;

export const monitoringPages = (deps: Deps) =>
  new Elysia({ name: 'portal-monitoring' })
    .use(portalSession(deps))
    .get(
      HERE,
      async ({ session, query }) => {
        const view = viewOf(deps, session, HERE);
        const f = queryOf(Filters, query);
        const list = await listSchedules({ ctx: { lender: session.lender, deps }, input: { limit: 50, status: f.status, next_page_token: f.next_page_token } });
        return page(view, 'Monitoring', [
          <form method="get" action={HERE}>
            <Choice id="status" name="status" label="Status" values={SCHEDULE_STATUSES} labels={STATUS_LABELS} any="Any" selected={f.status} />
            <button type="submit">Show</button>
          </form>,
          <Table
            caption="Scheduled balance monitoring"
            headers={['Schedule', 'Status', 'Runs', 'Next run', 'Last run', 'Authorizers']}
            rows={list.schedules.map((x) => [
              <a href={`${HERE}/${encodeURIComponent(x.schedule_id)}`}>{x.name}</a>,
              STATUS_LABELS[x.status],
              every(x),
              <Time at={x.next_run_at} now={view.now} />,
              x.last_run_at ? <Time at={x.last_run_at} now={view.now} /> : 'never',
              count(x.total_authorizers),
            ])}
            empty="No schedule. Create one with POST /v1/monitoring/scheduled_balance_request."
          />,
          <Pager path={HERE} query={{ status: f.status }} next={list.next_page_token} />,
        ]);
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(`${HERE}/:id`, ({ session, params }) => showSchedule(deps, session, params.id), { signedIn: true, detail: { hide: true } })
    .post(
      `${HERE}/:id/run`,
      async ({ session, params }) => {
        try {
          const r = await runScheduleNow({ ctx: { lender: session.lender, deps }, input: { id: params.id } });
          return await showSchedule(deps, session, params.id, {
            kind: 'ok',
            text: `Run started: ${count(r.total_authorizers)} authorizer${r.total_authorizers === 1 ? '' : 's'} in batch ${r.batch_id}. The schedule's webhook is told when it completes; the next regular run is unchanged.`,
          }, r.batch_id);
        } catch (err) {
          return showSchedule(deps, session, params.id, { kind: 'error', text: `Not run: ${problemOf(err)}` });
        }
      },
      { signedIn: true, detail: { hide: true } },
    );

async function showSchedule(deps: Deps, session: PortalSession, id: string, message?: Message, batchId?: string) {
  const ctx = { lender: session.lender, deps };
  const view = viewOf(deps, session, HERE);
  const x = await scheduleView(ctx, await getSchedule({ ctx, input: { id } }));
  return page(view, x.name, [
    <Notice message={message} />,
    batchId ? (
      <p>
        <a href={`/portal/balance-checks/${encodeURIComponent(batchId)}`}>Open the run's batch</a>
      </p>
    ) : null,
    <Facts
      caption="Schedule"
      rows={[
        ['Status', STATUS_LABELS[x.status]],
        ['Runs', every(x)],
        ['Starts', x.starts_at ?? '—'],
        ['Expires', x.expires_at],
        ['Next run', <Time at={x.next_run_at} now={view.now} />],
        ['Last run', x.last_run_at ? <Time at={x.last_run_at} now={view.now} /> : 'never'],
        ['Authorizers', count(x.total_authorizers)],
        ['Threshold', x.threshold_amount === null ? '—' : dollarAmount(x.threshold_amount)],
        ['Webhook', x.webhook ?? '—'],
        ['Created', <Time at={x.created_at} now={view.now} />],
      ]}
    />,
    x.status === 'ACTIVE' ? <ActionButton action={`${HERE}/${encodeURIComponent(x.schedule_id)}/run`} csrf={view.user.csrf} label="Run now" /> : null,
    <p>
      <a href={HERE}>All schedules</a>
    </p>,
  ]);
}
