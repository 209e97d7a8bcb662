import { Elysia, t } from 'elysia';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
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
    .get('/schedules/:id', ({ lender, params }) => {
      const ctx = { lender, deps };
      return view(ctx, getSchedule({ ctx, input: { id: params.id } }));
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
    .delete('/schedules/:id', ({ lender, params }) => disableSchedule({ ctx: { lender, deps }, input: { id: params.id } }), {
      auth: true,
      params: IdParams,
      response: { 200: DisableResponse, ...errors(401, 404, 429) },
      detail: { tags, summary: 'Disable a schedule', description: 'No further runs; the schedule and its history are kept.' },
    });
