import type { Ctx } from '../../deps';
import { Forbidden, InvalidInput } from '../../platform/errors';
import { csvCell } from '../../platform/csv';
import { isUuid } from '../../platform/ids';
import { formatCents } from '../../platform/money';
import { storedReadingProblem } from '../../adapters/bank-data/plausible';
import { type ExportRow } from './store';

const FIXED_COLUMNS = ['Authorizer ID', 'Batch ID', 'Institution', 'Phone', 'Zip', 'Balance', 'Status', 'Creator', 'Timestamp'];
/** Distinct meta_ columns of one export: metadata multiplies every row's width, so it is bounded. */
export const EXPORT_META_COLUMNS_MAX = 200;
/** Cells written between two yields to the event loop: about 2,000 rows of the fixed columns. */
const CELLS_PER_CHUNK = 20_000;
/** Items whose metadata keys are read between two yields. */
const KEY_SCAN_ITEMS = 1_000;

/** Lets the event loop run (other requests, health checks) between two slices of a long export. */
const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The byte order SQLite sorts text in, so the columns keep the order they always had. */
const byUtf8 = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** batch_ids from the query: present, each a UUID (400 otherwise), duplicates dropped, order kept. */
export function parseBatchIds(raw: string | string[] | undefined, alias?: string | string[]): string[] {
  const listOf = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
  const list = [...listOf(raw), ...listOf(alias)];
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
 * The distinct metadata keys of the batches' items, read a slice at a time with a yield between slices; more
 * than EXPORT_META_COLUMNS_MAX refuses the export (400) as soon as the scan passes it.
 */
async function exportMetaKeys(ctx: Ctx, batchIds: string[]): Promise<string[]> {
  const keys = new Set<string>();
  for (const batchId of batchIds) {
    let afterSeq = -1;
    for (;;) {
      const page = await ctx.deps.stores.balances.metadataKeysPage(ctx, batchId, afterSeq, KEY_SCAN_ITEMS);
      if (page.last === null) break;
      for (const k of page.keys) keys.add(k);
      if (keys.size > EXPORT_META_COLUMNS_MAX) {
        throw InvalidInput.field(
          'batch_ids',
          `These batches carry more than ${EXPORT_META_COLUMNS_MAX} distinct metadata keys; an export has at most ${EXPORT_META_COLUMNS_MAX} meta_ columns`,
          'Export fewer batches at once',
        );
      }
      afterSeq = page.last;
      await yieldToEventLoop();
    }
  }
  return [...keys].sort(byUtf8);
}

/**
 * The CSV export as a stream: the nine fixed columns, then one meta_<key> column per metadata key found in
 * the result set (at most 200), in alphabetical order. Rows are read from SQLite in chunks as the client
 * consumes them, so memory stays flat whatever the export's size, and the event loop gets a turn between
 * chunks, so a 100,000-row export never holds up other requests for long. Any batch that is unknown or
 * another lender's refuses the whole request (403) before anything is written.
 */
export async function exportBalancesCsv({ ctx, input }: { ctx: Ctx; input: { batchIds: string[] } }): Promise<ReadableStream<Uint8Array>> {
  const { batchIds } = input;
  const owned = await ctx.deps.stores.balances.ownedBatchIds(ctx, ctx.lender.id, batchIds);
  if (owned.length !== batchIds.length) {
    throw new Forbidden('A requested batch does not belong to this API key; nothing was exported');
  }
  const metaKeys = await exportMetaKeys(ctx, batchIds);
  // Wide rows (many meta_ columns) make fewer rows per chunk, so each chunk costs about the same.
  const rowsPerChunk = Math.max(100, Math.floor(CELLS_PER_CHUNK / (FIXED_COLUMNS.length + metaKeys.length)));

  const header = [...FIXED_COLUMNS, ...metaKeys.map((k) => `meta_${k}`)].map(csvCell).join(',') + '\r\n';
  const encoder = new TextEncoder();
  let batchIndex = 0;
  let afterId = 0;

  const line = (stored: ExportRow): string => {
    // A balance or time no reading may have (stored before the sources' answers were checked) is written as the
    // failed read it was, as every list shows it.
    const r = storedReadingProblem(stored.cents, stored.asOf, stored.at) === null ? stored : { ...stored, cents: null, status: 'RETRIEVAL_FAILED' };
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
    async pull(controller) {
      await yieldToEventLoop();
      let out = '';
      let rows = 0;
      while (rows < rowsPerChunk && batchIndex < batchIds.length) {
        const chunk = await ctx.deps.stores.balances.exportPage(ctx, batchIds[batchIndex]!, afterId, rowsPerChunk - rows);
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
