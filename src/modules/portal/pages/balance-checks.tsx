import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { OneOf } from '../../../platform/schema';
import { exportBalancesCsv, exportFilename, parseBatchIds } from '../../balance-requests/export';
import { listBalances, listBatches, submitBalanceCsv } from '../../balance-requests/service';
import { batchSummary } from '../../balance-requests/batch-view';
import { STATUS_MESSAGES } from '../../balance-requests/status';
import type { FailedAuthorizer } from '../../authorizers/rules';
import { DomainError } from '../../../platform/errors';
import { formOf, page, portalSession, problemOf, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { Choice, Csrf, Facts, Notice, Pager, Table, Time, type Message } from '../ui/components';
import { count, dollarAmount } from '../ui/format';

// /portal/balance-checks: a balance CSV sent from the browser (each row that failed, with its reason, as the
// API lists them), and the lender's batches, newest first and paged: the batches it sent by default, the
// monitoring reads behind a filter. Each batch has its page (counts by status, the results paged) and exports
// as CSV.

const HERE = '/portal/balance-checks';
const CSV_LIMIT = 5 * 1024 * 1024;
const KINDS = { sent: 'Sent by you (API, CSV, schedules)', monitoring: 'Monitoring reads', all: 'All batches' } as const;
const KIND_VALUES = ['sent', 'monitoring', 'all'] as const;

const UploadForm = Type.Object({
  file: Type.Optional(Type.Unknown({ description: 'the CSV file (checked below: a non-empty file within the limit)' })),
  webhook_url: Type.Optional(Type.String({ maxLength: 2048 })),
});

const Filters = Type.Object(
  { kind: Type.Optional(OneOf(KIND_VALUES)), next_page_token: Type.Optional(Type.String({ maxLength: 512 })) },
  { additionalProperties: false },
);
const ResultsQuery = Type.Object({ next_page_token: Type.Optional(Type.String({ maxLength: 512 })) }, { additionalProperties: false });
const RESULTS_PAGE = 50;

const STATUS_LABELS: Record<string, string> = {
  SUCCESS: 'Balance read',
  NO_MATCH: 'No match',
  ACCOUNT_CLOSED: 'Account closed',
  BANK_UNSUPPORTED: 'Bank not supported',
  RETRIEVAL_FAILED: 'Bank data error',
  RETRY_LIMIT: 'Retries used up',
  PROCESSING_ERROR: 'Not processed',
};

export const batchHref = (id: string) => `${HERE}/${encodeURIComponent(id)}`;

/** The rows of a CSV that failed, each with its row number and reason, as the API's failed_authorizers. */
const FAILED_SHOWN = 200;

function FailedRows(props: { failed: FailedAuthorizer[] }) {
  if (props.failed.length === 0) return null;
  const more = props.failed.length - FAILED_SHOWN;
  return (
    <>
    <Table
      caption={`${count(props.failed.length)} row${props.failed.length === 1 ? '' : 's'} failed validation and ${props.failed.length === 1 ? 'was' : 'were'} not checked; correct ${props.failed.length === 1 ? 'it' : 'them'} and upload ${props.failed.length === 1 ? 'it' : 'them'} again`}
      headers={['Row', 'Authorizer', 'Account type', 'Reason']}
      rows={props.failed.slice(0, FAILED_SHOWN).map((f) => [String(f.row_number), f.authorizer_unique_id ?? '—', f.account_type === 'DEBIT_CARD' ? 'Debit card' : 'Bank account', f.error])}
    />
    {more > 0 ? <p>{count(more)} more failed rows are not shown here; the API's answer (failed_authorizers) lists every one.</p> : null}
    </>
  );
}

async function BatchContent(props: { deps: Deps; s: PortalSession; id: string; token?: string; now: number }) {
  const ctx = { lender: props.s.lender, deps: props.deps };
  const b = await batchSummary({ ctx, input: { batchId: props.id } });
  const results = await listBalances({ ctx, input: { batchId: b.batch_id, limit: RESULTS_PAGE, next_page_token: props.token } });
  const statuses = Object.entries(b.by_status).filter(([, n]) => n > 0);
  return (
    <>
      <Facts
        caption="Batch"
        rows={[
          ['Status', b.status],
          ['Source', b.schedule_id ? <>{b.source} (<a href={`/portal/monitoring/${encodeURIComponent(b.schedule_id)}`}>its schedule</a>)</> : b.source],
          ['Creator', b.creator ?? '—'],
          ['Submitted', <Time at={b.submitted_at} now={props.now} />],
          ['Completed', b.completed_at ? <Time at={b.completed_at} now={props.now} /> : 'not yet'],
          ['Checked', `${count(b.total_processed)} of ${count(b.total_authorizers)}`],
        ]}
      />
      <p>
        <a href={`${HERE}/export?batch_ids=${encodeURIComponent(b.batch_id)}`} download>
          Download the results as CSV
        </a>
      </p>
      <Table
        caption="Results by status"
        headers={['Status', 'Authorizers']}
        rows={[
          ...statuses.map(([s, n]) => [<>{STATUS_LABELS[s] ?? s} <small><code>{s}</code></small></>, count(n)]),
          ...(b.waiting > 0 ? [['Waiting to be checked', count(b.waiting)]] : []),
        ]}
        empty="No result yet."
      />
      <Table
        caption="Results, in the order they were recorded"
        headers={['Authorizer', 'Balance', 'Status', 'Recorded']}
        phone={[0, 1, 2]}
        rows={results.balances.map((r) => [
          r.authorizer_unique_id,
          r.balance === null ? '—' : dollarAmount(r.balance),
          `${r.balance_status_code} ${STATUS_MESSAGES[r.balance_status_code] ?? ''}`.trim(),
          <Time at={r.timestamp} now={props.now} />,
        ])}
        empty={b.status === 'completed' ? 'No result.' : 'No result yet: the batch is being checked.'}
      />
      <Pager path={batchHref(b.batch_id)} query={{}} next={results.has_more ? results.next_page_token : null} />
      <p>
        <a href={HERE}>All batches</a>
      </p>
    </>
  );
}

export const balanceCheckPages = (deps: Deps) => {
  const render = async (s: PortalSession, query: Record<string, string | undefined>, message: Message = null, failed: FailedAuthorizer[] = [], batchId?: string) => {
    const view = viewOf(deps, s, HERE);
    const f = queryOf(Filters, query);
    const kind = f.kind ?? 'sent';
    const list = await listBatches({ ctx: { lender: s.lender, deps }, input: { limit: 50, kind, next_page_token: f.next_page_token } });
    return page(view, 'Balance checks', [
      <Notice message={message} />,
      batchId ? (
        <p>
          <a href={batchHref(batchId)}>Open the batch</a>
        </p>
      ) : null,
      <FailedRows failed={failed} />,
      <form method="post" action={HERE} enctype="multipart/form-data">
        <Csrf token={view.user.csrf} />
        <label for="file">CSV file</label>
        <input id="file" name="file" type="file" accept=".csv,text/csv" required />
        <label for="webhook_url">Webhook URL (optional)</label>
        <input id="webhook_url" name="webhook_url" type="url" />
        <button type="submit">Upload</button>
      </form>,
      <h2>Batches</h2>,
      <form method="get" action={HERE}>
        <Choice id="kind" name="kind" label="Show" values={KIND_VALUES} labels={KINDS} selected={kind} />
        <button type="submit">Show</button>
      </form>,
      <Table
        caption={`${KINDS[kind]}, newest first`}
        headers={['Batch', 'Source', 'Status', 'Progress', 'Creator', 'Submitted', 'Export']}
        phone={[0, 2, 3]}
        rows={list.batches.map((b) => [
          <a href={batchHref(b.id)}>
            <code>{b.id}</code>
          </a>,
          b.source,
          b.status,
          `${count(b.totalProcessed)} of ${count(b.totalAuthorizers)}`,
          b.creator ?? '—',
          <Time at={b.submittedAt} now={view.now} />,
          <a href={`${HERE}/export?batch_ids=${encodeURIComponent(b.id)}`}>Download CSV</a>,
        ])}
      />,
      <Pager path={HERE} query={{ kind: f.kind }} next={list.nextPageToken} />,
    ]);
  };
  return new Elysia({ name: 'portal-balance-checks' })
    .use(portalSession(deps))
    .get(HERE, ({ session, query }) => render(session, query), { signedIn: true, detail: { hide: true } })
    .post(
      HERE,
      async ({ session, body }) => {
        try {
          const form = formOf(UploadForm, body);
          const file = form.file;
          if (!(file instanceof Blob) || file.size === 0) return await render(session, {}, { kind: 'error', text: 'Choose a CSV file to upload.' });
          if (file.size > CSV_LIMIT) return await render(session, {}, { kind: 'error', text: `The file is larger than ${CSV_LIMIT} bytes.` });
          const webhook = form.webhook_url || null;
          const r = await submitBalanceCsv({
            ctx: { lender: session.lender, deps },
            input: { file: new Uint8Array(await file.arrayBuffer()), webhookUrl: webhook, creator: session.user.displayName },
          });
          const failed = r.body.failed_authorizers;
          return await render(
            session,
            {},
            { kind: 'ok', text: `${r.body.message}${failed.length ? `; ${failed.length} row${failed.length === 1 ? '' : 's'} failed validation (listed below)` : ''}. Batch ${r.body.batch_id}.` },
            failed,
            r.body.batch_id,
          );
        } catch (e) {
          // Every row refused: the API's failed_authorizers are in the error's details, each shown with its reason.
          const failed = e instanceof DomainError ? ((e.details?.failed_authorizers as FailedAuthorizer[] | undefined) ?? []) : [];
          return render(session, {}, { kind: 'error', text: problemOf(e) }, failed);
        }
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      `${HERE}/:id`,
      ({ session, params, query }) => {
        const view = viewOf(deps, session, HERE);
        const q = queryOf(ResultsQuery, query);
        return page(view, `Batch ${params.id}`, <BatchContent deps={deps} s={session} id={params.id} token={q.next_page_token} now={view.now} />);
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(
      `${HERE}/export`,
      async ({ session, request }) => {
        const ids = new URL(request.url).searchParams.getAll('batch_ids');
        const stream = await exportBalancesCsv({ ctx: { lender: session.lender, deps }, input: { batchIds: parseBatchIds(ids) } });
        return new Response(stream, {
          headers: { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename=${exportFilename(deps.clock.now())}` },
        });
      },
      { signedIn: true, detail: { hide: true } },
    );
};
