import { Elysia, t, type TSchema } from 'elysia';
import { maturity } from '../../http/maturity';
import type { Deps } from '../../deps';
import { errors } from '../../http/errors';
import { documentedBody, rawMultipartBody, RawMultipart, MULTIPART_OVERHEAD_BYTES } from '../../http/body';
import type { Auth } from '../../http/auth';
import { InvalidInput } from '../../platform/errors';
import { Int, OneOf } from '../../platform/schema';
import { RESULT_FILE_FORMATS } from '../../../db/schema/enums';
import { uploadResultsJson } from './service';
import { UPLOAD_LIMIT_BYTES } from './read';
import { apiCreator, getUpload, listUploads } from './history';
import { pageTokenQuery } from '../../platform/pagination';

export const EXAMPLE_FILE =
  'authorizer_unique_id,reference,payment_amount,payment_status,submitted_at,settled_at,returned_at,return_code\n' +
  'loan-1001,INV-77,425.00,settled,2026-11-02,2026-11-04,,\n' +
  'loan-1002,INV-78,"$1,234.56",returned,11/02/2026,,11/05/2026,R01 - Insufficient Funds\n' +
  ',,99.00,paid,2026-11-02,2026-11-03,,\n';

const UploadBody = t.Object(
  { file: t.File({ description: 'The CSV file (UTF-8, a byte-order mark allowed), at most 10 MB' }) },
  { examples: [{ file: EXAMPLE_FILE }] },
);

/** Problems of a row, or of the file as a whole. */
const Problem = t.Object({ row: Int({ description: '0 for the file as a whole' }), reason: t.String(), severity: t.Union([t.Literal('error'), t.Literal('warning')]) });

/**
 * The API answers in snake_case, as every other route does; the camelCase names this route answered with
 * before stay beside them with the same values until 0.4.0, marked deprecated in the document.
 */
const alias = <T extends TSchema>(schema: T, replacement: string): T => ({
  ...schema,
  deprecated: true,
  description: `Deprecated: the same value as ${replacement}, which replaces it; removed in 0.4.0`,
});

const Format = OneOf(RESULT_FILE_FORMATS, {
  description: 'generic (results), annotated_export (a balance export with the payment columns added), notifications_of_change (a change_code column and no status: a report of Notifications of Change)',
});

const ALREADY_RECORDED =
  'Accepted rows whose reference an earlier upload had already recorded with the same status, giving no date it ' +
  'lacked (the same file sent again, or rows it shared with an earlier one): they add nothing and are not recorded ' +
  'again; each has a warning in problems';

const EXAMPLE_REPORT = {
  format: 'generic' as const,
  row_count: 2,
  data_row_count: 3,
  matched: 2,
  needs_attention: 0,
  already_recorded: 0,
  notifications_of_change: 0,
  dry_run: false,
  rowCount: 2,
  dataRowCount: 3,
  needsAttention: 0,
  dryRun: false,
  rows: [
    { row: 2, reference: 'INV-77', authorizer_unique_id: 'loan-1001', status: 'settled', amount_cents: 42500, authorizerUniqueId: 'loan-1001', amountCents: 42500 },
    { row: 3, reference: 'INV-78', authorizer_unique_id: 'loan-1002', status: 'returned', amount_cents: 123456, authorizerUniqueId: 'loan-1002', amountCents: 123456 },
  ],
  problems: [{ row: 4, reason: 'authorizer_unique_id or reference is required', severity: 'error' as const }],
};

export const Report = t.Object(
  {
    format: Format,
    row_count: Int({ description: 'Accepted rows (already_recorded of them added nothing)' }),
    data_row_count: Int({ description: 'Data rows found, blank and summary rows excluded' }),
    matched: Int({ description: 'Accepted rows matched to a borrower' }),
    needs_attention: Int({ description: 'Accepted rows not matched; stored' }),
    already_recorded: Int({ description: ALREADY_RECORDED }),
    notifications_of_change: Int({
      description: 'Notifications of Change recorded from the rows’ change_code and corrected_data (with dry_run: that would be); one recorded before, or not matched to a borrower’s bank account, is a warning in problems',
    }),
    dry_run: t.Boolean({ description: 'true: nothing was written' }),
    rowCount: alias(Int(), 'row_count'),
    dataRowCount: alias(Int(), 'data_row_count'),
    needsAttention: alias(Int(), 'needs_attention'),
    dryRun: alias(t.Boolean(), 'dry_run'),
    rows: t.Array(
      t.Object({
        row: Int({ description: 'Row number; the header is row 1' }),
        reference: t.String({ description: 'The reference sent, or the key assigned (UPL-…) when none was' }),
        authorizer_unique_id: t.Union([t.String(), t.Null()]),
        status: t.String(),
        amount_cents: Int(),
        authorizerUniqueId: alias(t.Union([t.String(), t.Null()]), 'authorizer_unique_id'),
        amountCents: alias(Int(), 'amount_cents'),
      }),
    ),
    problems: t.Array(Problem),
  },
  { examples: [EXAMPLE_REPORT] },
);

const UploadSummary = t.Object({
  id: t.String(),
  recorded_at: t.String({ format: 'date-time', description: 'When it was recorded' }),
  creator: t.Union([t.String(), t.Null()], { description: 'The portal user, or the API key (by its prefix), that sent it' }),
  format: Format,
  row_count: Int({ description: 'Accepted rows' }),
  data_row_count: Int(),
  matched: Int(),
  needs_attention: Int(),
  already_recorded: t.Union([Int(), t.Null()], { description: `${ALREADY_RECORDED}. null for an upload recorded before they were counted` }),
  problem_count: Int({ description: 'Entries in the report’s problems (its row-0 note of problems left out included)' }),
  recordedAt: alias(t.String({ format: 'date-time' }), 'recorded_at'),
  rowCount: alias(Int(), 'row_count'),
  dataRowCount: alias(Int(), 'data_row_count'),
  needsAttention: alias(Int(), 'needs_attention'),
  problemCount: alias(Int(), 'problem_count'),
});

const EXAMPLE_UPLOAD = {
  id: '01936f3a-0000-7000-8000-0000000000aa',
  recorded_at: '2026-11-23T14:38:00.000Z',
  creator: 'API key drs_live_Ab12…',
  format: 'generic' as const,
  row_count: 2,
  data_row_count: 3,
  matched: 2,
  needs_attention: 0,
  already_recorded: 0,
  problem_count: 1,
  recordedAt: '2026-11-23T14:38:00.000Z',
  rowCount: 2,
  dataRowCount: 3,
  needsAttention: 0,
  problemCount: 1,
};

const UploadList = t.Object(
  { uploads: t.Array(UploadSummary), has_more: t.Boolean(), next_page_token: t.Union([t.String(), t.Null()]) },
  { examples: [{ uploads: [EXAMPLE_UPLOAD], has_more: false, next_page_token: null }] },
);

const UploadListQuery = t.Object({ limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: 20 })), ...pageTokenQuery });

const UploadDetail = t.Composite([UploadSummary, t.Object({ problems: t.Array(Problem) })], {
  examples: [{ ...EXAMPLE_UPLOAD, problems: [{ row: 4, reason: 'authorizer_unique_id or reference is required', severity: 'error' }] }],
});

const TrueOrFalse = t.Union([t.Literal('true'), t.Literal('false')]);

const UploadQuery = t.Object({
  dry_run: t.Optional(t.Union(TrueOrFalse.anyOf, { description: 'true: parse and match everything, write nothing' })),
  dryRun: t.Optional(alias(TrueOrFalse, 'dry_run')),
});

/** Whether an upload is a dry run: dry_run, or the deprecated dryRun; both given, they must agree. */
export function dryRunOf(query: { dry_run?: 'true' | 'false'; dryRun?: 'true' | 'false' }): boolean {
  const { dry_run, dryRun } = query;
  if (dry_run !== undefined && dryRun !== undefined && dry_run !== dryRun) throw InvalidInput.field('dry_run', 'dry_run and dryRun disagree; send dry_run alone');
  return (dry_run ?? dryRun) === 'true';
}

export const uploadRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1', normalize: false }).use(auth).post(
    '/payment_results/uploads',
    async ({ lender, body, query, request }) => {
      if (!(body instanceof RawMultipart)) throw InvalidInput.field('file', 'Send the CSV file in a multipart part named file');
      const ctx = { lender, deps };
      // The multipart body is parsed where the file is read (the upload worker), not here. The request's
      // signal ends with its connection: an upload whose caller hung up is dropped or stopped.
      const json = await uploadResultsJson({
        ctx,
        input: { bytes: body.bytes, multipart: body.contentType, dryRun: dryRunOf(query), handOver: true, creator: await apiCreator(ctx, lender.keyId) },
        signal: request.signal,
      });
      // The report's JSON as the worker made it (the Report schema), sent part by part: megabytes of it never
      // pass through this thread as objects, nor as one copy.
      let next = 0;
      const answer = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (next < json.length) controller.enqueue(json[next++]!);
          else controller.close();
        },
      });
      return new Response(answer, { headers: { 'content-type': 'application/json' } });
    },
    {
      auth: true,
      // Above 10 MB by a margin: a file just over the limit gets the 400 the spec names, not a 413.
      parse: rawMultipartBody(UPLOAD_LIMIT_BYTES * 2 + MULTIPART_OVERHEAD_BYTES),
      query: UploadQuery,
      response: { 200: Report, ...errors(400, 401, 413, 415, 429, 503) },
      detail: {
        ...documentedBody(UploadBody, 'multipart/form-data'),
        tags: ['Payments'],
        summary: 'Upload payment results (CSV)',
        ...maturity(
          'In Development',
          'Outcomes of debits the service cannot read from a processor, one row per debit, in a part ' +
          'named file. Columns (case-insensitive; spaces and punctuation read as underscores): authorizer_unique_id ' +
          '(authorizer_id) or reference (payment_reference), payment_amount (amount), payment_status (outcome, status), ' +
          'submitted_at (payment_date, submitted), settled_at (settlement_date, settled_date), returned_at (return_date, ' +
          'returned_date), return_code (return_reason), batch_id. A balance export with payment columns added is read as it is. ' +
          'Every rule of a row is checked and listed in problems (error: not recorded; warning: recorded, something ignored ' +
          'or unmatched). The rows are recorded in slices, in transactions that let other writes go between two slices, ' +
          'and exactly once: once the first is committed the upload is recorded to its end, finished by the service ' +
          'after a crash or a stop; ' +
          'dry_run=true decides everything and writes nothing (dryRun=true, deprecated, too). A row whose reference an ' +
          'earlier upload recorded already with the same status, and that gives no date it lacked, adds nothing: it is counted in already_recorded ' +
          'and has a warning saying so, and sending a file again never records an outcome twice. The report answers in ' +
          'snake_case; its camelCase names (rowCount, dataRowCount, needsAttention, dryRun, and authorizerUniqueId and ' +
          'amountCents in rows) are deprecated copies of the same values, removed in 0.4.0. 200 with ' +
          'the report for any UTF-8 file of at most 10 MB (a malformed one too: its problem is listed and nothing is ' +
          'recorded); 400 only for a file over 10 MB or not UTF-8. A recorded upload is kept in the upload history ' +
          '(GET /v1/payment_results/uploads).',
        ),
      },
    },
  )
  .get('/payment_results/uploads', ({ lender, query }) => listUploads({ ctx: { lender, deps }, input: query }), {
    auth: true,
    query: UploadListQuery,
    response: { 200: UploadList, ...errors(400, 401, 429) },
    detail: {
      tags: ['Payments'],
      summary: 'The history of recorded uploads',
      ...maturity('In Development', 'Recorded uploads of payment results, newest first, with who sent them and their counts; dry runs are not kept.'),
    },
  })
  .get('/payment_results/uploads/:id', ({ lender, params }) => getUpload({ ctx: { lender, deps }, input: { id: params.id } }), {
    auth: true,
    params: t.Object({ id: t.String({ maxLength: 64 }) }),
    response: { 200: UploadDetail, ...errors(401, 404, 429) },
    detail: {
      tags: ['Payments'],
      summary: 'One recorded upload: its counts and its problems',
      ...maturity('In Development', 'The report of a recorded upload as it was answered, without its rows: the counts and the problems (at most 10,000, and a row-0 note of how many more). Another lender’s upload is not found.'),
    },
  });
