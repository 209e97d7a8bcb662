import { Elysia } from 'elysia';
import { Type } from '@sinclair/typebox';
import type { Deps } from '../../../deps';
import { getUpload, listUploads } from '../../payment-results-upload/history';
import { uploadSummary } from '../../payment-results-upload/service';
import type { UploadSummary } from '../../payment-results-upload/types';
import { formOf, page, portalSession, problemOf, queryOf, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { ActionButton, Csrf, Facts, Notice, Pager, Table, Time, type Message } from '../ui/components';
import { count } from '../ui/format';

// /portal/payments/results-upload: a results file checked (a dry run of POST /v1/payment_results/uploads),
// then recorded on confirmation; under it the history of recorded uploads (GET /v1/payment_results/uploads)
// and a page per upload with its counts and problems.

const HERE = '/portal/payments/results-upload';
const PROBLEMS_SHOWN = 200;
const CHECK_PROBLEMS_SHOWN = 100;
const UploadForm = Type.Object({
  action: Type.Union([Type.Literal('check'), Type.Literal('confirm')]),
  checked: Type.Optional(Type.String({ maxLength: 64 })),
  file: Type.Optional(Type.Unknown({ description: 'the CSV file (checked below: a non-empty file)' })),
});
const Paging = Type.Object({ next_page_token: Type.Optional(Type.String({ maxLength: 512 })) }, { additionalProperties: false });
const rowsText = (n: number) => `${count(n)} row${n === 1 ? '' : 's'}`;
/** An upload's rows already recorded, as the history shows them: unknown for one recorded before they were counted. */
const alreadyText = (n: number | null) => (n === null ? '—' : count(n));

/**
 * What recording a file came to, in words: the rows an earlier upload had recorded already are said to be so,
 * never counted as recorded now.
 */
function recordedMessage(name: string, r: Pick<UploadSummary, 'rowCount' | 'alreadyRecorded'>): string {
  const fresh = r.rowCount - r.alreadyRecorded;
  if (r.alreadyRecorded === 0) return `Recorded ${name}: ${rowsText(r.rowCount)}.`;
  const were = `${rowsText(r.alreadyRecorded)} ${r.alreadyRecorded === 1 ? 'was' : 'were'} already recorded by an earlier upload`;
  if (fresh === 0) return `Nothing new in ${name}: its ${were} and ${r.alreadyRecorded === 1 ? 'is' : 'are'} not recorded again.`;
  return `Recorded ${name}: ${rowsText(fresh)}; ${were} and ${r.alreadyRecorded === 1 ? 'is' : 'are'} not recorded again.`;
}

/** The first problems of a report, and how many more there are and where all of them are listed. */
function ProblemList(props: { problems: { row: number; severity: string; reason: string }[]; total: number; past?: boolean; listedBy: string }) {
  const hidden = props.total - props.problems.length;
  return (
    <>
      <Table
        caption={`Problems (error: the row ${props.past ? 'was' : 'is'} not recorded; warning: recorded, or stored unmatched)`}
        headers={['Row', 'Severity', 'Problem']}
        rows={props.problems.map((p) => [String(p.row), p.severity, p.reason])}
        empty="No problems."
      />
      {hidden > 0 && <p>{`${count(hidden)} more ${hidden === 1 ? 'problem is' : 'problems are'} not shown here; ${props.listedBy}.`}</p>}
    </>
  );
}

/** A check's or a recording's report: the counts and the first problems (a page of every problem of a large file would be too large to open). */
function Report(props: { report: UploadSummary; name: string; checkedId: string | null; csrf: string }) {
  const r = props.report;
  const fresh = r.rowCount - r.alreadyRecorded;
  return (
    <section aria-labelledby="report">
      <h2 id="report">{`${r.dryRun ? 'Check' : 'Recorded'}: ${props.name}`}</h2>
      <Facts
        caption={r.dryRun ? 'Dry run: nothing was recorded yet' : 'Recorded'}
        rows={[
          ['Format', r.format],
          ['Data rows', count(r.dataRowCount)],
          ['Rows accepted', count(r.rowCount)],
          ['Matched to a borrower', count(r.matched)],
          ['Needing attention', count(r.needsAttention)],
          ['Already recorded by an earlier upload', count(r.alreadyRecorded)],
        ]}
      />
      <ProblemList problems={r.problems.slice(0, CHECK_PROBLEMS_SHOWN)} total={r.problemCount} listedBy="the API's report (POST /v1/payment_results/uploads?dry_run=true) lists them" />
      {props.checkedId !== null ? (
        <ActionButton action={HERE} csrf={props.csrf} name="action" value="confirm" fields={{ checked: props.checkedId }} label={`Record ${rowsText(fresh)}`} />
      ) : (
        r.dryRun &&
        (r.rowCount > 0 && fresh === 0 ? (
          <p>Every accepted row is already recorded by an earlier upload: there is nothing new to record.</p>
        ) : (
          <p>No row can be recorded: correct the file and check it again.</p>
        ))
      )}
    </section>
  );
}

/** The recorded uploads, newest first, 20 a page. */
export async function UploadHistory(props: { deps: Deps; s: PortalSession; now: number; token?: string }) {
  const list = await listUploads({ ctx: { lender: props.s.lender, deps: props.deps }, input: { limit: 20, next_page_token: props.token } });
  return (
    <section aria-labelledby="history">
      <h2 id="history">Recorded uploads</h2>
      <Table
        caption="Uploads recorded from the portal or the API, newest first (checks are not kept)"
        headers={['Recorded', 'By', 'Format', 'Rows accepted', 'Matched', 'Needing attention', 'Already recorded', 'Problems']}
        rows={list.uploads.map((u) => [
          <a href={`${HERE}/history/${encodeURIComponent(u.id)}`}>
            <Time at={u.recorded_at} now={props.now} />
          </a>,
          u.creator ?? '—',
          u.format,
          `${count(u.row_count)} of ${count(u.data_row_count)}`,
          count(u.matched),
          count(u.needs_attention),
          alreadyText(u.already_recorded),
          count(u.problem_count),
        ])}
        empty="No upload recorded yet."
      />
      <Pager path={HERE} query={{}} next={list.next_page_token} />
    </section>
  );
}

export const resultsUploadPages = (deps: Deps) => {
  // Files checked and held for confirmation: in memory on SQLite; on PostgreSQL shared by the replicas, sealed.
  const checked = deps.portal.heldFiles;
  const render = (s: PortalSession, opts: { message?: Message; shown?: { report: UploadSummary; name: string; checkedId?: string | null }; token?: string } = {}) => {
    const view = viewOf(deps, s, HERE);
    return page(view, 'Results upload', [
      <Notice message={opts.message} />,
      <p>
        Outcomes of debits made outside the service, as CSV (at most 10 MB, UTF-8): one row per debit with authorizer_unique_id or reference, payment_amount,
        payment_status, submitted_at, settled_at, returned_at and return_code. The file is checked first and nothing is recorded until you confirm.
      </p>,
      <form method="post" action={HERE} enctype="multipart/form-data">
        <Csrf token={view.user.csrf} />
        <input type="hidden" name="action" value="check" />
        <label for="results_file">Results CSV file</label>
        <input id="results_file" name="file" type="file" accept=".csv,text/csv" required />
        <button type="submit">Check file</button>
      </form>,
      opts.shown ? <Report report={opts.shown.report} name={opts.shown.name} checkedId={opts.shown.checkedId ?? null} csrf={view.user.csrf} /> : <></>,
      <UploadHistory deps={deps} s={s} now={view.now} token={opts.token} />,
    ]);
  };
  return new Elysia({ name: 'portal-results-upload' })
    .use(portalSession(deps))
    .get(HERE, ({ session, query }) => render(session, { token: queryOf(Paging, query).next_page_token }), { signedIn: true, detail: { hide: true } })
    .post(
      HERE,
      async ({ session, body }) => {
        const ctx = { lender: session.lender, deps };
        try {
          await checked.sweep(deps.clock.now());
          const form = formOf(UploadForm, body);
          if (form.action === 'confirm') {
            const held = await checked.take(session.tokenHash, form.checked ?? '', deps.clock.now());
            if (!held) {
              return render(session, {
                message: { kind: 'error', text: `The checked file is no longer held (a file is kept 30 minutes after its check${checked.acrossRestarts ? '' : ', and not across a restart'}). Choose it again.` },
              });
            }
            const report = await uploadSummary({ ctx, input: { bytes: held.bytes, dryRun: false, creator: session.user.displayName } });
            return render(session, { message: { kind: 'ok', text: recordedMessage(held.name, report) }, shown: { report, name: held.name } });
          }
          const file = form.file;
          if (!(file instanceof Blob) || file.size === 0) return render(session, { message: { kind: 'error', text: 'Choose a CSV file to check.' } });
          const bytes = new Uint8Array(await file.arrayBuffer());
          const name = file instanceof File && file.name ? file.name : 'the file';
          const report = await uploadSummary({ ctx, input: { bytes, dryRun: true } });
          // A file all of whose rows are recorded already has nothing to confirm.
          const checkedId = report.rowCount - report.alreadyRecorded > 0 ? await checked.hold(session.tokenHash, { bytes, name, at: deps.clock.now() }) : null;
          return render(session, { shown: { report, name, checkedId } });
        } catch (e) {
          return render(session, { message: { kind: 'error', text: problemOf(e) } });
        }
      },
      { signedIn: true, detail: { hide: true } },
    )
    .get(
    `${HERE}/history/:id`,
    async ({ session, params }) => {
      const u = await getUpload({ ctx: { lender: session.lender, deps }, input: { id: params.id } });
      const view = viewOf(deps, session, HERE);
      return page(view, 'A recorded upload', [
        <Facts
          caption="Recorded"
          rows={[
            ['Recorded', <Time at={u.recorded_at} now={view.now} />],
            ['By', u.creator ?? '—'],
            ['Format', u.format],
            ['Data rows', count(u.data_row_count)],
            ['Rows accepted', count(u.row_count)],
            ['Matched to a borrower', count(u.matched)],
            ['Needing attention', count(u.needs_attention)],
            ['Already recorded by an earlier upload', alreadyText(u.already_recorded)],
          ]}
        />,
        <ProblemList problems={u.problems.slice(0, PROBLEMS_SHOWN)} total={u.problems.length} past listedBy={`GET /v1/payment_results/uploads/${u.id} lists them all`} />,
        <p>
          <a href={HERE}>Results upload</a>
        </p>,
      ]);
    },
    { signedIn: true, detail: { hide: true } },
  );
};
