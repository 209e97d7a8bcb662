import { and, eq, inArray } from 'drizzle-orm';
import { batches } from '../../../db/schema';
import type { Ctx } from '../../deps';
import { dbOf } from '../../platform/context';
import { Forbidden, InvalidInput } from '../../platform/errors';
import { csvCell } from '../../platform/csv';
import { isUuid } from '../../platform/ids';
import { formatCents } from '../../platform/money';
import * as q from './queries';
import type { ExportRow } from './queries';

const FIXED_COLUMNS = ['Authorizer ID', 'Batch ID', 'Institution', 'Phone', 'Zip', 'Balance', 'Status', 'Creator', 'Timestamp'];
const ROWS_PER_CHUNK = 2000;

/** batch_ids from the query: present, each a UUID (400 otherwise), duplicates dropped, order kept. */
export function parseBatchIds(raw: string | string[] | undefined): string[] {
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  const ids = list.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '');
  if (ids.length === 0) throw InvalidInput.field('batch_ids', 'batch_ids is required: repeat the parameter once per batch');
  // Named by position, never by the value sent.
  const bad = ids.flatMap((id, i) => (isUuid(id) ? [] : [i + 1]));
  if (bad.length > 0) {
    const which = bad.length === 1 ? `value ${bad[0]}` : `values ${bad.slice(0, 5).join(', ')}${bad.length > 5 ? ', …' : ''}`;
    throw InvalidInput.field('batch_ids', `Expected batch ids as UUIDs; ${which} of ${ids.length} ${bad.length === 1 ? 'is' : 'are'} not`);
  }
  return [...new Set(ids.map((id) => id.toLowerCase()))];
}

/**
 * The CSV export as a stream: the nine fixed columns, then one meta_<key> column per metadata key found in
 * the result set, in alphabetical order. Rows are read from SQLite in chunks as the client consumes them,
 * so memory stays flat whatever the export's size. Any batch that is unknown or another lender's refuses
 * the whole request (403) before anything is written.
 */
export function exportBalancesCsv({ ctx, input }: { ctx: Ctx; input: { batchIds: string[] } }): ReadableStream<Uint8Array> {
  const { sqlite } = ctx.deps;
  const { batchIds } = input;
  const owned = dbOf(ctx)
    .select({ id: batches.id })
    .from(batches)
    .where(and(eq(batches.lenderId, ctx.lender.id), inArray(batches.id, batchIds)))
    .all();
  if (owned.length !== batchIds.length) {
    throw new Forbidden('A requested batch does not belong to this API key; nothing was exported');
  }
  const metaKeys = q.metadataKeys(sqlite, batchIds);

  const header = [...FIXED_COLUMNS, ...metaKeys.map((k) => `meta_${k}`)].map(csvCell).join(',') + '\r\n';
  const encoder = new TextEncoder();
  let batchIndex = 0;
  let afterId = 0;

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
        const chunk = q.exportPage(sqlite, batchIds[batchIndex]!, afterId, ROWS_PER_CHUNK - rows);
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
