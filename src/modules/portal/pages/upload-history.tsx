import { Elysia } from 'elysia';
import type { Deps } from '../../../deps';
import { getUpload, listUploads } from '../../payment-results-upload/history';
import { page, portalSession, viewOf } from '../plugin';
import type { PortalSession } from '../session';
import { Facts, Pager, Table, Time } from '../ui/components';
import { count } from '../ui/format';

// The history of recorded results uploads (GET /v1/payment_results/uploads), under the upload form, and one
// upload's counts and problems.

const HERE = '/portal/payments/results-upload';
const PROBLEMS_SHOWN = 200;

/** The recorded uploads, newest first, 20 a page. */
export function UploadHistory(props: { deps: Deps; s: PortalSession; now: number; token?: string }) {
  const list = listUploads({ ctx: { lender: props.s.lender, deps: props.deps }, input: { limit: 20, next_page_token: props.token } });
  return (
    <section aria-labelledby="history">
      <h2 id="history">Recorded uploads</h2>
      <Table
        caption="Uploads recorded from the portal or the API, newest first (checks are not kept)"
        headers={['Recorded', 'By', 'Format', 'Rows recorded', 'Matched', 'Needing attention', 'Problems']}
        rows={list.uploads.map((u) => [
          <a href={`${HERE}/history/${encodeURIComponent(u.id)}`}>
            <Time at={u.recorded_at} now={props.now} />
          </a>,
          u.creator ?? '—',
          u.format,
          `${count(u.rowCount)} of ${count(u.dataRowCount)}`,
          count(u.matched),
          count(u.needsAttention),
          count(u.problemCount),
        ])}
        empty="No upload recorded yet."
      />
      <Pager path={HERE} query={{}} next={list.next_page_token} />
    </section>
  );
}

export const uploadHistoryPages = (deps: Deps) =>
  new Elysia({ name: 'portal-upload-history' }).use(portalSession(deps)).get(
    `${HERE}/history/:id`,
    ({ session, params }) => {
      const u = getUpload({ ctx: { lender: session.lender, deps }, input: { id: params.id } });
      const view = viewOf(deps, session, HERE);
      const shown = u.problems.slice(0, PROBLEMS_SHOWN);
      const hidden = u.problems.length - shown.length;
      return page(view, 'A recorded upload', [
        <Facts
          caption="Recorded"
          rows={[
            ['Recorded', <Time at={u.recorded_at} now={view.now} />],
            ['By', u.creator ?? '—'],
            ['Format', u.format],
            ['Data rows', count(u.dataRowCount)],
            ['Rows recorded', count(u.rowCount)],
            ['Matched to a borrower', count(u.matched)],
            ['Needing attention', count(u.needsAttention)],
          ]}
        />,
        <Table
          caption="Problems (error: the row was not recorded; warning: recorded, or stored unmatched)"
          headers={['Row', 'Severity', 'Problem']}
          rows={shown.map((p) => [String(p.row), p.severity, p.reason])}
          empty="No problems."
        />,
        hidden > 0 ? <p>{`${count(hidden)} more problems are not shown here; GET /v1/payment_results/uploads/${u.id} lists them all.`}</p> : <></>,
        <p>
          <a href={HERE}>Results upload</a>
        </p>,
      ]);
    },
    { signedIn: true, detail: { hide: true } },
  );
