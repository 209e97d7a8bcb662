import type { Deps } from '../../platform/deps';
import { BadRequest, Forbidden } from '../../platform/errors';
import { csvCell } from '../../platform/csv';
import { isUuid } from '../../platform/ids';

const FIXED_COLUMNS = ['Authorizer ID', 'Batch ID', 'Institution', 'Phone', 'Zip', 'Balance', 'Status', 'Creator', 'Timestamp'];
const ROWS_PER_CHUNK = 2000;

interface ExportRow {
  aid: string;
  batchId: string;
  institution: string | null;
  phone: string | null;
  zip: string | null;
  cents: number | null;
  status: string;
  creator: string | null;
  at: number;
  metadata: string | null;
}

/** batch_ids from the query: present, each a UUID (400 otherwise), duplicates dropped, order kept. */
export function parseBatchIds(raw: string | string[] | undefined): string[] {
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const ids = list.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
  if (ids.length === 0) throw BadRequest.field('batch_ids', 'batch_ids is required: repeat the parameter once per batch');
  const bad = ids.filter((id) => !isUuid(id));
  if (bad.length > 0) throw BadRequest.field('batch_ids', `Not a UUID: ${bad.slice(0, 5).join(', ')}`);
  return [...new Set(ids.map((id) => id.toLowerCase()))];
}

const formatCents = (c: number): string => {
  const sign = c < 0 ? '-' : '';
  const abs = Math.abs(c);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
};

/**
 * The CSV export as a stream: the nine fixed columns, then one meta_<key> column per metadata key found in
 * the result set, in alphabetical order. Rows are read from SQLite in chunks as the client consumes them,
 * so memory stays flat whatever the export's size. Any batch that is unknown or another lender's refuses
 * the whole request (403) before anything is written.
 */
export function exportBalancesCsv(deps: Deps, lenderId: string, batchIds: string[]): ReadableStream<Uint8Array> {
  const { sqlite } = deps;
  const placeholders = batchIds.map(() => '?').join(',');
  const owned = sqlite
    .query<{ id: string }, string[]>(`SELECT id FROM batches WHERE lender_id = ? AND id IN (${placeholders})`)
    .all(lenderId, ...batchIds);
  if (owned.length !== batchIds.length) {
    throw new Forbidden('A requested batch does not belong to this API key; nothing was exported');
  }
  const metaKeys = sqlite
    .query<{ key: string }, string[]>(
      `SELECT DISTINCT j.key AS key FROM batch_items i, json_each(i.metadata) j
        WHERE i.batch_id IN (${placeholders}) AND i.metadata IS NOT NULL ORDER BY j.key`,
    )
    .all(...batchIds)
    .map((r) => r.key);

  const header = [...FIXED_COLUMNS, ...metaKeys.map((k) => `meta_${k}`)].map(csvCell).join(',') + '\r\n';
  const encoder = new TextEncoder();
  let batchIndex = 0;
  let afterId = 0;
  const page = sqlite.query<ExportRow & { rid: number }, [string, number, number]>(
    `SELECT r.id AS rid, r.authorizer_unique_id AS aid, r.batch_id AS batchId, r.institution, i.phone, i.zip,
            r.balance_cents AS cents, r.export_status AS status, b.creator, r.recorded_at AS at, i.metadata
       FROM balance_results r
       JOIN batch_items i ON i.id = r.item_id
       JOIN batches b ON b.id = r.batch_id
      WHERE r.batch_id = ? AND r.id > ?
      ORDER BY r.id LIMIT ?`,
  );

  const line = (r: ExportRow): string => {
    // Phone (validated E.164), balance, status and timestamp are the service's own values: written as they are.
    let s =
      csvCell(r.aid) + ',' + r.batchId + ',' + csvCell(r.institution) + ',' + (r.phone ?? '') + ',' + csvCell(r.zip) + ',' +
      (r.cents === null ? '' : formatCents(r.cents)) + ',' + r.status + ',' + csvCell(r.creator) + ',' + new Date(r.at).toISOString();
    if (metaKeys.length > 0) {
      const meta = r.metadata ? (JSON.parse(r.metadata) as Record<string, unknown>) : {};
      for (const k of metaKeys) {
        const v = meta[k];
        s += ',' + (typeof v === 'number' || typeof v === 'boolean' ? String(v) : csvCell(v as string | undefined));
      }
    }
    return s + '\r\n';
  };

  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(header));
    },
    pull(controller) {
      let out = '';
      let rows = 0;
      while (rows < ROWS_PER_CHUNK && batchIndex < batchIds.length) {
        const chunk = page.all(batchIds[batchIndex]!, afterId, ROWS_PER_CHUNK - rows);
        for (const r of chunk) out += line(r);
        rows += chunk.length;
        if (chunk.length === 0) {
          batchIndex++;
          afterId = 0;
        } else afterId = chunk[chunk.length - 1]!.rid;
      }
      if (out) controller.enqueue(encoder.encode(out));
      if (batchIndex >= batchIds.length) controller.close();
    },
  });
}

export const exportFilename = (now: number): string =>
  `batch-export-${new Date(now).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')}.csv`;
