import { InvalidInput } from '../../platform/errors';
import { METADATA_KEY_MAX, METADATA_KEYS_MAX, METADATA_VALUE_MAX } from '../../platform/fields';
import { CsvError, CsvRowLimit, decodeCsvBytes, metaKey, normalizeHeader, readCsvAsync } from '../../platform/csv';
import { isIdentifier } from '../../platform/fields';
import { problemsOf } from '../../platform/validation';
import { Authorizer } from '../authorizers/fields';
import type { AuthorizerCandidate, FailedAuthorizer } from '../authorizers/rules';

export const MAX_CSV_ROWS = 5000;

/** The bank_link of a row: bank_link_provider, then access token and account id (Plaid) or account (Stripe). */
const BANK_LINK_COLUMNS = ['bank_link_provider', 'bank_link_access_token', 'bank_link_account_id', 'bank_link_account'] as const;

/** A row's bank_link from its columns: undefined when none is set, a message when they do not make one. */
function bankLinkOf(v: Record<string, string>): AuthorizerCandidate['bank_link'] | string {
  const provider = v.bank_link_provider ?? '';
  if (provider === '') {
    return BANK_LINK_COLUMNS.some((c) => v[c]) ? 'bank_link_provider (plaid or stripe) is required with the other bank_link_ columns' : undefined;
  }
  if (provider === 'plaid') {
    if (v.bank_link_account) return 'bank_link_account is for stripe links; a plaid link takes bank_link_access_token and bank_link_account_id';
    return { provider, access_token: v.bank_link_access_token ?? '', account_id: v.bank_link_account_id ?? '' };
  }
  if (provider === 'stripe') {
    if (v.bank_link_access_token || v.bank_link_account_id) return 'a stripe link takes bank_link_account (fca_…) only';
    return { provider, account: v.bank_link_account ?? '' };
  }
  return 'bank_link_provider must be plaid or stripe';
}

const KNOWN_COLUMNS = new Set([
  'authorizer_unique_id',
  'phone_number',
  'ssn',
  'ein',
  'account_number',
  'routing_number',
  'debit_card_number',
  'cvv',
  'expiration_month',
  'expiration_year',
  'first_name',
  'last_name',
  'street_address_line1',
  'street_address_line2',
  'city',
  'state',
  'zip_code',
  'country',
  'date_of_birth',
  ...BANK_LINK_COLUMNS,
]);

const tooManyRows = () => InvalidInput.field('file', `The CSV has more than ${MAX_CSV_ROWS} data rows; at most ${MAX_CSV_ROWS} are accepted per file`);
/** A schema path of an authorizer as the CSV names it: its column (address fields and metadata are flat there). */
function columnOf(path: string): string {
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'address' && parts[1]) return parts[1];
  if (parts[0] === 'metadata' && parts[1]) return `meta_${parts[1]}`;
  return parts.join('.') || 'row';
}

function intCell(v: string): number | undefined | 'bad' {
  if (v === '') return undefined;
  return /^\d{1,4}$/.test(v) ? Number(v) : 'bad';
}

/**
 * Turns an uploaded balance CSV into authorizer candidates. Cells stay text, so leading zeros survive
 * exactly as the file has them (and a value that lost one fails validation, as it should). Row problems
 * that can be told from the cell alone (a date that is not MM/DD/YYYY, a month that is not a number) come
 * back as failed rows; a file that cannot be read at all is a 400.
 */
export async function parseBalanceCsv(bytes: Uint8Array): Promise<{
  candidates: { candidate: AuthorizerCandidate; rowNumber: number }[];
  failed: FailedAuthorizer[];
  warnings: string[];
}> {
  const { text, encoding } = decodeCsvBytes(bytes);
  const warnings: string[] = [];
  if (encoding === 'latin-1') warnings.push('The file is not valid UTF-8; it was read as Latin-1 (Windows-1252). Save it as UTF-8 to be sure names are read as intended.');
  let table;
  try {
    // The row cap is checked as rows are read, so that a file far over it is not read to the end first.
    table = await readCsvAsync(text, { maxRows: MAX_CSV_ROWS });
  } catch (e) {
    if (e instanceof CsvRowLimit) throw tooManyRows();
    if (e instanceof CsvError) throw InvalidInput.field('file', `The CSV could not be read: ${e.message}`);
    throw e;
  }
  if (table.header.length === 0) throw InvalidInput.field('file', 'The CSV file is empty');
  const columns = table.header.map((h) => {
    const meta = metaKey(h);
    return meta !== null ? { meta } : { name: normalizeHeader(h) };
  });
  if (!columns.some((c) => c.name === 'authorizer_unique_id')) {
    throw InvalidInput.field('file', 'The CSV needs an authorizer_unique_id column');
  }
  // The metadata rules of the JSON request: each meta_ column becomes a key of every row's metadata.
  const metaColumns = columns.filter((c) => c.meta !== undefined);
  if (metaColumns.length > METADATA_KEYS_MAX) {
    throw InvalidInput.field('file', `The CSV has ${metaColumns.length} meta_ columns; at most ${METADATA_KEYS_MAX} are accepted (each is a metadata key)`);
  }
  const longKey = columns.findIndex((c) => c.meta !== undefined && c.meta.length > METADATA_KEY_MAX);
  if (longKey >= 0) {
    throw InvalidInput.field('file', `Column ${longKey + 1}: a meta_ column's key may be at most ${METADATA_KEY_MAX} characters`);
  }
  const unknown = columns.filter((c) => c.name !== undefined && !KNOWN_COLUMNS.has(c.name)).map((c) => c.name);
  if (unknown.length > 0) warnings.push(`Columns ignored (not recognised): ${unknown.join(', ')}`);

  const candidates: { candidate: AuthorizerCandidate; rowNumber: number }[] = [];
  const failed: FailedAuthorizer[] = [];
  for (const [n, row] of table.rows.entries()) {
    // Other requests get a turn now and then: 5,000 rows of checks are tens of milliseconds.
    if (n > 0 && n % 500 === 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const v: Record<string, string> = {};
    const metadata: Record<string, string> = {};
    columns.forEach((c, i) => {
      const cell = (row.cells[i] ?? '').trim();
      if (c.meta !== undefined) {
        if (cell !== '') metadata[c.meta] = cell;
      } else if (c.name && KNOWN_COLUMNS.has(c.name)) v[c.name] = cell;
    });
    const fail = (error: string) =>
      failed.push({
        // An identifier that breaks the rule is not repeated back (a cell can be any length).
        authorizer_unique_id: isIdentifier(v.authorizer_unique_id) ? v.authorizer_unique_id : null,
        error,
        account_type: v.debit_card_number && !v.account_number ? 'DEBIT_CARD' : 'ACCOUNT_NUMBER',
        row_number: row.line,
      });
    if (!v.authorizer_unique_id) {
      fail('authorizer_unique_id is required');
      continue;
    }
    const longValue = Object.keys(metadata).find((k) => metadata[k]!.length > METADATA_VALUE_MAX);
    if (longValue !== undefined) {
      fail(`meta_${longValue} is longer than ${METADATA_VALUE_MAX} characters`);
      continue;
    }
    const month = intCell(v.expiration_month ?? '');
    const year = intCell(v.expiration_year ?? '');
    if (month === 'bad' || year === 'bad') {
      fail('expiration_month and expiration_year must be whole numbers');
      continue;
    }
    let dob: AuthorizerCandidate['date_of_birth'];
    if (v.date_of_birth) {
      const m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(v.date_of_birth);
      if (!m) {
        fail('date_of_birth must be MM/DD/YYYY');
        continue;
      }
      dob = { month: Number(m[1]), day: Number(m[2]), year: Number(m[3]) };
      if (dob.month < 1 || dob.month > 12 || dob.day < 1 || dob.day > 31) {
        fail('date_of_birth is not a valid date');
        continue;
      }
    }
    const bankLink = bankLinkOf(v);
    if (typeof bankLink === 'string') {
      fail(bankLink);
      continue;
    }
    const opt = (k: string) => (v[k] ? v[k] : undefined);
    const candidate: AuthorizerCandidate = {
      authorizer_unique_id: v.authorizer_unique_id,
      first_name: opt('first_name'),
      last_name: opt('last_name'),
      phone_number: opt('phone_number'),
      ssn: opt('ssn'),
      ein: opt('ein'),
      account_number: opt('account_number'),
      routing_number: opt('routing_number'),
      debit_card_number: opt('debit_card_number'),
      cvv: opt('cvv'),
      expiration_month: month,
      expiration_year: year,
      date_of_birth: dob,
      address: {
        street_address_line1: opt('street_address_line1'),
        street_address_line2: opt('street_address_line2'),
        city: opt('city'),
        state: opt('state'),
        zip_code: opt('zip_code'),
        country: opt('country'),
      },
      metadata: Object.keys(metadata).length > 0 ? metadata : undefined,
      ...(bankLink ? { bank_link: bankLink } : {}),
    };
    // The JSON request's field rules (lengths, formats, metadata), from the same schema: a row that breaks
    // one fails alone, as an authorizer of a JSON request would.
    const problems = problemsOf(Authorizer, candidate);
    if (problems.length > 0) {
      fail(problems.map((p) => `${columnOf(p.path)}: ${p.message}`).join('; '));
      continue;
    }
    candidates.push({ candidate, rowNumber: row.line });
  }
  return { candidates, failed, warnings };
}
