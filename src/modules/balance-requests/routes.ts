import { Elysia, t } from 'elysia';
import type { Deps } from '../../deps';
import { InvalidInput } from '../../platform/errors';
import { identifierSchema } from '../../platform/fields';
import { errorResponses, errors } from '../../http/errors';
import { multipartBody, rawJsonBody, MULTIPART_OVERHEAD_BYTES } from '../../http/body';
import type { Auth } from '../../http/auth';
import {
  BalanceRequestBody,
  BalanceResult,
  BalancesQuery,
  BatchStatus,
  BatchSubmission,
  CsvBatchSubmission,
  CsvUploadBody,
  ExportQuery,
  History,
  HistoryQuery,
} from './model';
import { authorizerHistory, getBatchStatus, listBalances, submitBalanceCsv, submitBalanceRequestBody } from './service';
import { exportBalancesCsv, exportFilename, parseBatchIds } from './export';

/** The batch of `/v1/balances`: the spec's `batchId`, or `batch_id` as every other place spells it. */
function batchIdOf(query: { batchId?: string; batch_id?: string }): string {
  const { batchId, batch_id } = query;
  if (batchId !== undefined && batch_id !== undefined && batchId !== batch_id) {
    throw InvalidInput.field('batchId', 'batchId and batch_id name different batches; send one of them');
  }
  const id = batchId ?? batch_id;
  if (id === undefined || id === '') throw InvalidInput.field('batchId', 'batchId (or batch_id) is required: the batch_id of the submission');
  return id;
}

const tags = ['Balance checks'];
/** 5000 rows of a wide CSV stay well under this. */
const CSV_UPLOAD_LIMIT = 5 * 1024 * 1024;

export const balanceRoutes = (deps: Deps, auth: Auth) =>
  new Elysia({ prefix: '/v1', normalize: false })
    .use(auth)
    .post(
      '/balance_requests',
      async ({ lender, body, set }) => {
        const result = await submitBalanceRequestBody({ ctx: { lender, deps }, input: { bytes: body.bytes } });
        set.status = result.status;
        if (result.replayed) set.headers['idempotent-replayed'] = 'true';
        return result.body;
      },
      {
        auth: true,
        ...rawJsonBody(BalanceRequestBody),
        response: { 201: BatchSubmission, ...errors(400, 401, 413, 415, 429, 503) },
        detail: {
          tags,
          summary: 'Submit a batch of balance checks',
          description:
            'Up to 1000 authorizers. Each needs bank account information (account_number, routing_number) or debit card ' +
            'information (debit_card_number; approved lenders only), and ssn or ein. metadata: at most 50 keys of 1 to 64 ' +
            'letters, digits, dots, dashes or underscores, each a number, a boolean or a string of at most 1000 characters. ' +
            'authorizer_unique_id: 1 to 255 characters of well-formed Unicode without control characters. ' +
            'An optional bank_link ({provider: plaid, access_token, account_id} or {provider: stripe, account: fca_…}) reads the ' +
            'balance from that linked account through the lender’s bank-data connection for its provider (an authorizer whose ' +
            'provider has none fails alone); results then carry balance_kind and as_of. The link is sealed and never returned. ' +
            'The body may nest at most 32 levels; a body that breaks its schema anywhere is a 400 naming every path. ' +
            'Authorizers that fail a rule come back ' +
            'in failed_authorizers and the rest of the batch proceeds; when none passes the answer is 400 with the list in ' +
            'error.details.failed_authorizers. A body identical to one the lender sent in the last 24 hours (byte for byte: ' +
            'compared by SHA-256) is answered with that request’s answer again, with replayed: true in the body and the ' +
            'header Idempotent-Replayed: true: no batch is made and no balance is read again. To read the same authorizers ' +
            'again within 24 hours, send a changed body, for example a metadata value on an authorizer ("metadata": ' +
            '{"requested_at": "2026-11-21T15:00:00Z"}; it shows in the CSV export as a meta_ column); or, for a borrower ' +
            'enrolled for collection, POST /v1/payment_enrollments/{authorizer_unique_id}/read reads its balance now. ' +
            'A request cut off by the service stopping is a 503 and nothing of it was recorded: send it again.',
        },
      },
    )
    .post(
      '/balance_requests/csv',
      async ({ lender, body, set }) => {
        const file = body.file;
        if (file.size > CSV_UPLOAD_LIMIT) throw InvalidInput.field('file', `The file is larger than ${CSV_UPLOAD_LIMIT} bytes`);
        const result = await submitBalanceCsv({
          ctx: { lender, deps },
          input: { file: new Uint8Array(await file.arrayBuffer()), webhookUrl: body.webhook_url || null, replay: true },
        });
        set.status = result.status;
        if (result.replayed) set.headers['idempotent-replayed'] = 'true';
        return result.body as typeof result.body & { warnings: string[] };
      },
      {
        auth: true,
        parse: multipartBody(CSV_UPLOAD_LIMIT + MULTIPART_OVERHEAD_BYTES),
        body: CsvUploadBody,
        response: { 201: CsvBatchSubmission, ...errors(400, 401, 413, 415, 429) },
        detail: {
          tags,
          summary: 'Submit a batch of balance checks as CSV',
          description:
            'multipart/form-data with the file in a part named `file` and an optional `webhook_url` field. At most 5000 data ' +
            'rows. Columns: authorizer_unique_id, phone_number, ssn, ein, account_number, routing_number, debit_card_number, cvv, ' +
            'expiration_month, expiration_year, first_name, last_name, street_address_line1, street_address_line2, city, state, ' +
            'zip_code, country, date_of_birth (MM/DD/YYYY), bank_link_provider (plaid or stripe) with bank_link_access_token and ' +
            'bank_link_account_id (plaid) or bank_link_account (stripe, fca_…), and up to 50 meta_<key> columns (keys of at most 64 characters; a ' +
            'row whose meta_ cell is over 1000 characters fails). Each row is held to the field limits of the JSON ' +
            'request (lengths, formats, a well-formed authorizer_unique_id): a row that breaks one comes back in ' +
            'failed_authorizers naming the column. row_number counts the header as row 1. ' +
            'A file that is not UTF-8 is read as Latin-1 and a warning says so. As an identical JSON body is, the same ' +
            'file (byte for byte) with the same webhook_url sent again by the lender within 24 hours is answered with the ' +
            'first answer again, with replayed: true in the body and the header Idempotent-Replayed: true: no batch is ' +
            'made and no balance is read again. To read again within 24 hours, send a changed file (a meta_<key> column, ' +
            'meta_requested_at for example, or any other cell) or another webhook_url; or, for a borrower enrolled for ' +
            'collection, POST /v1/payment_enrollments/{authorizer_unique_id}/read reads its balance now.',
        },
      },
    )
    .get('/balance_requests/:batch_id', ({ lender, params }) => getBatchStatus({ ctx: { lender, deps }, input: { batchId: params.batch_id } }), {
      auth: true,
      params: t.Object({ batch_id: t.String() }),
      response: { 200: BatchStatus, ...errors(401, 404, 429) },
      detail: { tags, summary: 'Batch status', description: 'pending, processing or completed, with counts. Another lender’s batch reads as not found.' },
    })
    .get('/balances', ({ lender, query }) => listBalances({ ctx: { lender, deps }, input: { ...query, batchId: batchIdOf(query) } }), {
      auth: true,
      query: BalancesQuery,
      response: { 200: BalanceResult, ...errors(400, 401, 404, 429) },
      detail: {
        tags,
        summary: 'Balance results of a batch',
        description:
          'The batch is named by batchId (the spec’s spelling) or batch_id. Paginated in the order results were recorded; continue with next_page_token (or nextPageToken) until has_more is ' +
          'false. While the batch is processing, has_more stays true: poll with the last token every 30 to 60 seconds.',
      },
    })
    .get(
      '/balances/csv',
      async ({ lender, query }) => {
        const batchIds = parseBatchIds(query.batch_ids, query.batchIds);
        const stream = await exportBalancesCsv({ ctx: { lender, deps }, input: { batchIds } });
        return new Response(stream, {
          headers: {
            'content-type': 'text/csv; charset=utf-8',
            'content-disposition': `attachment; filename=${exportFilename(deps.clock.now())}`,
          },
        });
      },
      {
        auth: true,
        query: ExportQuery,
        detail: {
          tags,
          summary: 'Export balance results as CSV',
          description:
            'Repeat batch_ids (or batchIds) once per batch. Columns: Authorizer ID, Batch ID, Institution, Phone, Zip, Balance, Status, Creator, ' +
            'Timestamp, then one meta_<key> column per metadata key, alphabetical. At most 200 distinct meta_ columns per export: ' +
            'batches whose authorizers carry more keys than that together are refused with 400 (export fewer at once). If any ' +
            'batch is not the caller’s the whole request is refused with 403. Text cells that a spreadsheet would run as a ' +
            'formula are prefixed with a quote.',
          responses: {
            200: {
              description: 'The CSV file',
              content: {
                'text/csv': {
                  schema: { type: 'string' },
                  example:
                    'Authorizer ID,Batch ID,Institution,Phone,Zip,Balance,Status,Creator,Timestamp,meta_branch\r\n' +
                    'loan-1001,019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b,Sandbox Bank,+12025550143,02139,12345.67,SUCCESS,,2026-11-21T10:00:03.000Z,north\r\n',
                },
              },
            },
            ...errorResponses({ 400: 'batch_ids missing or not a UUID, or more than 200 distinct metadata keys', 401: 'Missing or invalid API key', 403: 'A batch is unknown or another lender’s', 429: 'Rate limited', 500: 'Internal error' }),
          },
        },
      },
    )
    .get(
      '/monitoring/authorizers/:id/history',
      ({ lender, params, query }) => authorizerHistory({ ctx: { lender, deps }, input: { authorizerId: params.id, ...query } }),
      {
        auth: true,
        params: t.Object({ id: identifierSchema('authorizer_unique_id') }),
        query: HistoryQuery,
        response: { 200: History, ...errors(400, 401, 429) },
        detail: {
          tags: ['Monitoring'],
          summary: 'Balance history of an authorizer',
          description:
            'Every balance read of the authorizer for this lender (on-demand batches and schedule runs), newest first. An ' +
            'identifier that is not well-formed Unicode or holds control characters is 400.',
        },
      },
    );
