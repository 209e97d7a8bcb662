import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { OneOf } from '../../../platform/schema';
import { parseBalanceCsv } from '../../balance-requests/csv-input';
import { exportBalancesCsv, exportFilename, parseBatchIds } from '../../balance-requests/export';
import { listBatches, submitBalanceCsv } from '../../balance-requests/service';
import { formOf, page, portalSession, problemOf, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { Choice, Csrf, Notice, Pager, Table, Time, type Message } from '../ui/components';
import { count } from '../ui/format';

// /portal/balance-checks: a balance CSV sent from the browser, and the lender's batches, newest first and
// paged: the batches it sent by default, the monitoring reads behind a filter. Each exports as CSV.

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

export const balanceCheckPages = (deps: Deps) => {
  const render = (s: PortalSession, query: Record<string, string | undefined>, message: Message = null) => {
    const view = viewOf(deps, s, HERE);
    const f = queryOf(Filters, query);
    const kind = f.kind ?? 'sent';
    const list = listBatches({ ctx: { lender: s.lender, deps }, input: { limit: 50, kind, next_page_token: f.next_page_token } });
    return page(view, 'Balance checks', [
      <Notice message={message} />,
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
        rows={list.batches.map((b) => [
          <code>{b.id}</code>,
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
          if (!(file instanceof Blob) || file.size === 0) return render(session, {}, { kind: 'error', text: 'Choose a CSV file to upload.' });
          if (file.size > CSV_LIMIT) return render(session, {}, { kind: 'error', text: `The file is larger than ${CSV_LIMIT} bytes.` });
          const webhook = form.webhook_url || null;
          const parsed = await parseBalanceCsv(new Uint8Array(await file.arrayBuffer()));
          const r = await submitBalanceCsv({
            ctx: { lender: session.lender, deps },
            input: { candidates: parsed.candidates, preFailed: parsed.failed, webhookUrl: webhook, warnings: parsed.warnings, creator: session.user.displayName },
          });
          const failed = r.body.failed_authorizers.length;
          return render(session, {}, { kind: 'ok', text: `${r.body.message}${failed ? `; ${failed} rows failed validation` : ''}.` });
        } catch (e) {
          return render(session, {}, { kind: 'error', text: problemOf(e) });
        }
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
