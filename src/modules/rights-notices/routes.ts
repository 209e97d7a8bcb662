import { Elysia } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import { schemaBody } from '../../http/body';
import type { Auth } from '../../http/auth';
import { RightsNotice, RightsNoticeList, RightsNoticeListQuery, RightsNoticeParams, RightsNoticeSent } from './model';
import { listNotices, recordNoticeSent } from './service';

const tags = ['Payments'];
const early = (description: string) => maturity('Early Access', description);

export const rightsNoticeRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1', normalize: false })
    .use(auth)
    .post(
      '/payment_enrollments/:authorizer_unique_id/rights_notice',
      ({ lender, params, body }) => recordNoticeSent({ ctx: { lender, deps }, input: { authorizerUniqueId: params.authorizer_unique_id, body } }),
      {
        auth: true,
        params: RightsNoticeParams,
        ...schemaBody(RightsNoticeSent),
        response: { 200: RightsNotice, ...errors(400, 401, 404, 409, 413, 415, 429) },
        detail: {
          tags,
          summary: 'Record a consumer-rights notice as sent',
          ...early(
            'After a covered borrower’s second consecutive failed attempt for funds the lender owes it the consumer-rights ' +
              'notice of the CFPB payday rule (12 CFR 1041.9(c)) within three business days (RIGHTS_NOTICE_DUE said so). The ' +
              'lender sends it and records here when (sent_at: not in the future, not before the notice’s learned_at, else ' +
              '400) and how (electronic or mail), with its own evidence_ref: the borrower’s oldest notice not sent is recorded. ' +
              'None waiting is 409; an unknown borrower, or another lender’s, is 404.',
          ),
        },
      },
    )
    .get('/compliance/notices', ({ lender, query }) => listNotices({ ctx: { lender, deps }, input: query }), {
      auth: true,
      query: RightsNoticeListQuery,
      response: { 200: RightsNoticeList, ...errors(400, 401, 429) },
      detail: {
        tags,
        summary: 'List consumer-rights notices',
        ...early(
          'The lender’s consumer-rights notices (12 CFR 1041.9(c)), by due_by then id (the most urgent first), paginated: ' +
            'open (not sent yet, overdue ones included), overdue (not sent and past due_by), sent, or every one without a state.',
        ),
      },
    });
