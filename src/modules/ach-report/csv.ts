import { csvLine, type CsvValue } from '../../platform/csv';
import type { AchReportView } from './service';

// The monthly ACH report as CSV, for a spreadsheet: one line per figure, `section,item,key,value`. The JSON's
// top-level values are the `report` section; each other section is one of the JSON's objects, its nested keys
// joined with dots (`rates.unauthorized.rate`); a listed Notification of Change is one line per field, its id
// as the item. The same figures as the JSON, bounded as it is.

export const CSV_HEADER = ['section', 'item', 'key', 'value'] as const;

const SECTIONS = ['debits', 'returns', 'notifications_of_change', 'accounts_blocked'] as const;

/** Every leaf of a value under `key`, nested keys joined with dots. */
function leaves(key: string, v: unknown, out: [string, CsvValue][]): void {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) leaves(key ? `${key}.${k}` : k, x, out);
  } else out.push([key, v as CsvValue]);
}

/** The report's lines, the header first, each ending CRLF. */
export function reportCsv(report: AchReportView): string {
  let out = csvLine(CSV_HEADER);
  for (const key of ['month', 'from', 'to', 'generated_at'] as const) out += csvLine(['report', '', key, report[key]]);
  for (const section of SECTIONS) {
    const { changes, ...figures } = report[section] as Record<string, unknown> & { changes?: Record<string, unknown>[] };
    const found: [string, CsvValue][] = [];
    leaves('', figures, found);
    for (const [key, value] of found) out += csvLine([section, '', key, value]);
    for (const { id, ...fields } of changes ?? []) {
      for (const [key, value] of Object.entries(fields)) out += csvLine([section, id as string, key, value as CsvValue]);
    }
  }
  return out;
}

/** The file's name: the lender's report of the month. */
export const reportFilename = (month: string) => `ach-report-${month}.csv`;

export { wantsCsv } from '../../platform/csv';
