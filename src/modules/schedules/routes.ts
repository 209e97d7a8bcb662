import { Elysia, t } from 'elysia';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import { Int } from '../../platform/schema';
import { schemaBody } from '../../http/body';
import type { Auth } from '../../http/auth';
import {
  CreateScheduleBody,
  CreateScheduleResponse,
  DisableResponse,
  RemoveAuthorizersBody,
  RemoveAuthorizersResponse,
  ScheduleList,
  ScheduleListQuery,
  ScheduleView,
  UpdateScheduleBody,
  UpdateScheduleResponse,
} from './model';
import { createSchedule, disableSchedule, getSchedule, listSchedules, removeAuthorizers, updateSchedule, view } from './service';
import { runScheduleNow } from './run-now';

const RunNowResponse = t.Object(
  {
    schedule_id: t.String(),
    batch_id: t.String({ description: 'The run’s batch: GET /v1/balance_requests/{batch_id}, /v1/balances?batch_id=…' }),
    submitted_at: t.String({ format: 'date-time' }),
    total_authorizers: Int({ minimum: 1 }),
  },
  { examples: [{ schedule_id: '019a4f3e-0000-7000-8000-00000000000a', batch_id: '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b', submitted_at: '2026-11-21T10:00:00.000Z', total_authorizers: 2 }] },
);

const tags = ['Monitoring'];
const IdParams = t.Object({ id: t.String({ description: 'schedule_id' }) });

export const scheduleRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1/monitoring', normalize: false })
    .use(auth)
    .post(
      '/scheduled_balance_request',
      async ({ lender, body, set }) => {
        const res = await createSchedule({ ctx: { lender, deps }, input: { body } });
        set.status = 201;
        return res;
      },
      {
        auth: true,
        ...schemaBody(CreateScheduleBody),
        response: { 201: CreateScheduleResponse, ...errors(400, 401, 409, 413, 415, 429) },
        detail: {
          tags,
          summary: 'Create a balance monitoring schedule',
          description:
            'Runs balance checks for its authorizers every interval_days (1 to 30) at time_of_day (HH:mm UTC; a random time ' +
            'between 08:00 and 11:00 when omitted), from starts_at (start_at also accepted) or the next time_of_day, with a ' +
            'final run on expires_at (default 30 days after creation, at most 365). Each run is a batch (source "schedule"). ' +
            'The webhook receives BALANCE_BATCH_COMPLETED after each run and BALANCE_THRESHOLD_ALERT when balances meet their ' +
            'threshold (the authorizer’s own overrides the schedule’s); it is required when any threshold is set. An invalid ' +
            'authorizer refuses the request (400 naming it). The name must be unique for the lender (409).',
        },
      },
    )
    .get('/schedules', ({ lender, query }) => listSchedules({ ctx: { lender, deps }, input: query }), {
      auth: true,
      query: ScheduleListQuery,
      response: { 200: ScheduleList, ...errors(400, 401, 429) },
      detail: { tags, summary: 'List schedules', description: 'Oldest first, optionally filtered by status; paginated.' },
    })
    .get('/schedules/:id', async ({ lender, params }) => {
      const ctx = { lender, deps };
      return view(ctx, await getSchedule({ ctx, input: { id: params.id } }));
    }, {
      auth: true,
      params: IdParams,
      response: { 200: ScheduleView, ...errors(401, 404, 429) },
      detail: { tags, summary: 'Get a schedule', description: 'Another lender’s schedule reads as not found.' },
    })
    .patch('/schedules/:id', ({ lender, params, body }) => updateSchedule({ ctx: { lender, deps }, input: { id: params.id, body } }), {
      auth: true,
      params: IdParams,
      ...schemaBody(UpdateScheduleBody),
      response: { 200: UpdateScheduleResponse, ...errors(400, 401, 404, 409, 415, 429) },
      detail: {
        tags,
        summary: 'Update a schedule',
        description:
          'At least one of name, interval_days, time_of_day, expires_at (in the future, within 365 days of creation). ' +
          'next_run_at is recomputed. Only an ACTIVE schedule can be updated (409 otherwise); a name used by another ' +
          'schedule is 409.',
      },
    })
    .patch('/schedules/:id/authorizers', ({ lender, params, body }) => removeAuthorizers({ ctx: { lender, deps }, input: { id: params.id, authorizerIds: body.authorizer_unique_ids } }), {
      auth: true,
      params: IdParams,
      ...schemaBody(RemoveAuthorizersBody),
      response: { 200: RemoveAuthorizersResponse, ...errors(400, 401, 404, 415, 429) },
      detail: {
        tags,
        summary: 'Remove authorizers from a schedule',
        description: 'Unknown identifiers are not errors. The rest keep running; with none left the schedule becomes DISABLED.',
      },
    })
    .post(
      '/schedules/:id/run',
      async ({ lender, params, set }) => {
        const res = await runScheduleNow({ ctx: { lender, deps }, input: { id: params.id } });
        set.status = 202;
        return res;
      },
      {
        auth: true,
        params: IdParams,
        response: { 202: RunNowResponse, ...errors(401, 404, 409, 429) },
        detail: {
          tags,
          summary: 'Run a schedule now',
          description:
            'Starts one run of an ACTIVE schedule now, beside its cadence (next_run_at does not move): a batch of its current ' +
            'authorizers, whose BALANCE_BATCH_COMPLETED and threshold alerts go to the schedule’s webhook as a regular run’s do. ' +
            '409 when the schedule is not ACTIVE, has no authorizers, or a run of it is still in progress. Bounded per lender: ' +
            '20 schedule runs and borrower reads on demand at once, then one every 3 seconds (429 with Retry-After), and the ' +
            'lender’s bound on authorizers waiting to be checked (429). Another lender’s schedule is 404.',
        },
      },
    )
    .delete('/schedules/:id', ({ lender, params }) => disableSchedule({ ctx: { lender, deps }, input: { id: params.id } }), {
      auth: true,
      params: IdParams,
      response: { 200: DisableResponse, ...errors(401, 404, 429) },
      detail: { tags, summary: 'Disable a schedule', description: 'No further runs; the schedule and its history are kept.' },
    });
