import { describe, expect, test } from 'bun:test';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer, cardNumberWithBalance, SANDBOX_BANK } from '../../helpers/fixtures';

const ctx = useTestContext();
const cardLender = ctx.newLender(undefined, { cards: true });

const card = (id: string, over: Record<string, unknown> = {}) => ({
  authorizer_unique_id: id,
  ssn: '123456789',
  debit_card_number: cardNumberWithBalance(5000),
  ...over,
});

/** Sends one failing and one passing authorizer; returns the failure's error text (or null when it passed). */
async function failureOf(a: Record<string, unknown>, key = ctx.lender.key): Promise<string | null> {
  const { status, body } = await ctx.json('POST', '/v1/balance_requests', {
    key,
    body: { authorizers: [a, bankAuthorizer(`ok-${crypto.randomUUID()}`)] },
  });
  expect(status).toBe(201);
  const f = body.failed_authorizers.find((x: { authorizer_unique_id: string }) => x.authorizer_unique_id === a.authorizer_unique_id);
  return f ? f.error : null;
}

async function csvFailures(csv: string, key = ctx.lender.key) {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'batch.csv');
  return ctx.json('POST', '/v1/balance_requests/csv', { form, key });
}

describe('per-authorizer rules (JSON)', () => {
  const cases: [string, Record<string, unknown>, Record<string, unknown>, RegExp][] = [
    ['routing number that lost a leading zero', { routing_number: '11000000' }, { routing_number: SANDBOX_BANK }, /leading zero/i],
    ['routing number failing the ABA checksum', { routing_number: '110000001' }, { routing_number: '110000000' }, /checksum|check digit/i],
    ['routing prefix outside the ABA ranges', { routing_number: '500000005' }, {}, /prefix|range|first two/i],
    ['ssn that lost a leading zero', { ssn: '23456789' }, { ssn: '023456789' }, /leading zero/i],
    ['ssn with letters', { ssn: '12345678A' }, { ssn: '123-45-6789' }, /digits/i],
    ['ein with the wrong length', { ssn: undefined, ein: '1234567' }, { ssn: undefined, ein: '12-3456789' }, /ein/i],
    ['zip code that lost a leading zero', { address: { zip_code: '2139' } }, { address: { zip_code: '02139' } }, /leading zero/i],
    ['phone number that is not a US number', { phone_number: '12345' }, { phone_number: '(202) 555-0143' }, /phone/i],
    ['neither ssn nor ein', { ssn: undefined }, { ssn: undefined, ein: '123456789' }, /ssn or ein/i],
    ['account number without a routing number', { routing_number: undefined }, {}, /routing_number/i],
    ['neither bank nor card information', { account_number: undefined, routing_number: undefined }, {}, /required/i],
    ['both bank and card information', { debit_card_number: cardNumberWithBalance(1) }, {}, /not both/i],
    ['date of birth that does not exist', { date_of_birth: { day: 31, month: 2, year: 1990 } }, { date_of_birth: { day: 28, month: 2, year: 1990 } }, /date_of_birth/i],
  ];
  for (const [name, bad, good, message] of cases) {
    test(`${name}: fails alone, the corrected row passes`, async () => {
      const id = crypto.randomUUID();
      expect(await failureOf(bankAuthorizer(`bad-${id}`, bad))).toMatch(message);
      expect(await failureOf(bankAuthorizer(`good-${id}`, good))).toBeNull();
    });
  }

  test('account numbers are not validated for length or format', async () => {
    expect(await failureOf(bankAuthorizer('acct-short', { account_number: '12' }))).toBeNull();
    expect(await failureOf(bankAuthorizer('acct-odd', { account_number: 'AB-0012' }))).toBeNull();
  });

  test('a duplicate identifier fails every copy, with row numbers', async () => {
    const { status, body } = await ctx.json('POST', '/v1/balance_requests', {
      body: { authorizers: [bankAuthorizer('dup'), bankAuthorizer('solo'), bankAuthorizer('dup')] },
    });
    expect(status).toBe(201);
    expect(body.failed_authorizers.map((f: { row_number: number }) => f.row_number)).toEqual([1, 3]);
    expect(body.message).toContain('1 authorizer');
  });

  test('every authorizer failing is a 400 listing them', async () => {
    const { status, body } = await ctx.json('POST', '/v1/balance_requests', {
      body: { authorizers: [bankAuthorizer('x1', { ssn: '1' }), bankAuthorizer('x2', { routing_number: '123' })] },
    });
    expect(status).toBe(400);
    expect(body.error.code).toBe('BAD_REQUEST');
    expect(body.error.details.failed_authorizers).toHaveLength(2);
  });

  test('more than 1000 authorizers is refused whole', async () => {
    const authorizers = Array.from({ length: 1001 }, (_, i) => bankAuthorizer(`big-${i}`));
    const { status, body } = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers } });
    expect(status).toBe(400);
    expect(body.error.details.errors[0].path).toContain('authorizers');
  });

  test('wrong types and unknown fields are structural 400s', async () => {
    expect((await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: 'x' } })).status).toBe(400);
    expect((await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('t', { expiration_month: 'May' })] } })).status).toBe(400);
    expect((await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('t')], surprise: true } })).status).toBe(400);
  });
});

describe('debit cards', () => {
  test('need the operator’s approval', async () => {
    expect(await failureOf(card('card-unapproved'))).toMatch(/approval/);
    expect(await failureOf(card('card-approved'), cardLender.key)).toBeNull();
  });

  test('a card number that lost a leading zero, an invalid number, expiry and cvv rules', async () => {
    expect(await failureOf(card('c-luhn', { debit_card_number: '4000000000000001' }), cardLender.key)).toMatch(/valid/);
    expect(await failureOf(card('c-short', { debit_card_number: '400000000000' }), cardLender.key)).toMatch(/incomplete|leading zero/);
    expect(await failureOf(card('c-exp', { expiration_month: 1, expiration_year: 2020 }), cardLender.key)).toMatch(/expired/);
    expect(await failureOf(card('c-exp-ok', { expiration_month: 12, expiration_year: 2030 }), cardLender.key)).toBeNull();
    expect(await failureOf(card('c-cvv', { cvv: '12' }), cardLender.key)).toMatch(/cvv/);
    // A 4-digit CVV that lost its leading zero is still 3 digits and passes.
    expect(await failureOf(card('c-cvv-ok', { cvv: '123' }), cardLender.key)).toBeNull();
    // A card linked to a bank account may carry a routing number; it is checked.
    expect(await failureOf(card('c-rt-bad', { routing_number: '11000000' }), cardLender.key)).toMatch(/leading zero/);
    expect(await failureOf(card('c-rt-ok', { routing_number: SANDBOX_BANK }), cardLender.key)).toBeNull();
  });

  test('a card failure reports account_type DEBIT_CARD', async () => {
    const { body } = await ctx.json('POST', '/v1/balance_requests', {
      body: { authorizers: [card('c-type'), bankAuthorizer('b-type')] },
    });
    expect(body.failed_authorizers[0]).toMatchObject({ authorizer_unique_id: 'c-type', account_type: 'DEBIT_CARD', row_number: 1 });
  });
});

describe('per-row rules (CSV)', () => {
  const header = 'authorizer_unique_id,ssn,ein,account_number,routing_number,zip_code,phone_number,debit_card_number,date_of_birth';

  test('leading-zero rules and the other row rules, with row numbers counting the header as row 1', async () => {
    const rows = [
      'ok1,023456789,,0000000100,110000000,02139,2025550143,,01/02/1990',
      'rt,023456789,,0000000100,11000000,,,,', // routing lost a zero
      'ssn,23456789,,0000000100,110000000,,,,', // ssn lost a zero
      'zip,023456789,,0000000100,110000000,2139,,,', // zip lost a zero
      'ein10,,123456789,0000000100,110000000,,,,', // 10-digit EIN that lost its zero: passes
      ',023456789,,0000000100,110000000,,,,', // no identifier
      'dob,023456789,,0000000100,110000000,,,,1990-01-02', // not MM/DD/YYYY
      'both,023456789,,0000000100,110000000,,,4000000000000002,',
      'acct,023456789,,12,110000000,,,,', // account number: any format
    ];
    const { status, body } = await csvFailures([header, ...rows].join('\r\n'));
    expect(status).toBe(201);
    const byRow = Object.fromEntries(body.failed_authorizers.map((f: { row_number: number; error: string }) => [f.row_number, f.error]));
    expect(Object.keys(byRow).map(Number).sort((a, b) => a - b)).toEqual([3, 4, 5, 7, 8, 9]);
    expect(byRow[3]).toMatch(/leading zero/);
    expect(byRow[4]).toMatch(/leading zero/);
    expect(byRow[5]).toMatch(/leading zero/);
    expect(byRow[7]).toMatch(/authorizer_unique_id/);
    expect(byRow[8]).toMatch(/MM\/DD\/YYYY/);
    expect(byRow[9]).toMatch(/not both/);
    expect(body.message).toContain('3 authorizers');
    expect(body.warnings).toEqual([]);
  });

  test('BOM, CRLF and quoted fields with commas and newlines', async () => {
    const csv = '\uFEFFauthorizer_unique_id,ssn,account_number,routing_number,meta_note\r\n"q,1",123456789,0000000100,110000000,"line one\nline two, with ""quotes"""\r\n';
    const { status, body } = await csvFailures(csv);
    expect(status).toBe(201);
    expect(body.failed_authorizers).toEqual([]);
  });

  test('a Latin-1 file is read with a warning', async () => {
    const text = 'authorizer_unique_id,first_name,ssn,account_number,routing_number\nlat1,José,123456789,0000000100,110000000\n';
    const bytes = Uint8Array.from([...text].map((c) => c.charCodeAt(0)));
    const form = new FormData();
    form.append('file', new Blob([bytes], { type: 'text/csv' }), 'latin1.csv');
    const { status, body } = await ctx.json('POST', '/v1/balance_requests/csv', { form });
    expect(status).toBe(201);
    expect(body.warnings.join(' ')).toMatch(/Latin-1/);
  });

  test('more than 5000 rows, no identifier column, and a non-multipart body are refused', async () => {
    const many = ['authorizer_unique_id,ssn,account_number,routing_number', ...Array.from({ length: 5001 }, (_, i) => `r${i},123456789,0000000100,110000000`)];
    const big = await csvFailures(many.join('\n'));
    expect(big.status).toBe(400);
    expect(big.body.error.message).toMatch(/5000/);
    const noId = await csvFailures('ssn,account_number\n123456789,1\n');
    expect(noId.status).toBe(400);
    expect(noId.body.error.message).toMatch(/authorizer_unique_id/);
    const notMultipart = await ctx.json('POST', '/v1/balance_requests/csv', { body: { file: 'x' } });
    expect(notMultipart.status).toBe(415);
  });

  test('exactly 5000 rows are accepted', async () => {
    const rows = ['authorizer_unique_id,ssn,account_number,routing_number', ...Array.from({ length: 5000 }, (_, i) => `m${i},123456789,0000000100,110000000`)];
    const { status, body } = await csvFailures(rows.join('\n'));
    expect(status).toBe(201);
    expect(body.message).toContain('5000 authorizers');
  });
});

describe('the JSON field rules hold in a balance CSV', () => {
  const head = 'authorizer_unique_id,ssn,account_number,routing_number,city,phone_number,expiration_month,date_of_birth';
  const ok = (id: string) => `${id},123456789,0001234567,110000000,,,,`;

  test('a 256-character identifier: a 400 naming the field in JSON, its row failing in a CSV', async () => {
    const id = 'i'.repeat(256);
    const json = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer(id), bankAuthorizer('fits-json')] } });
    expect(json.status).toBe(400);
    expect(json.body.error.details.errors.map((e: { path: string }) => e.path)).toEqual(['/authorizers/0/authorizer_unique_id']);
    const csv = await csvFailures([head, ok(id), ok('fits-csv')].join('\n'));
    expect(csv.status).toBe(201);
    expect(csv.body.failed_authorizers).toHaveLength(1);
    expect(csv.body.failed_authorizers[0]).toMatchObject({ authorizer_unique_id: null, row_number: 2, account_type: 'ACCOUNT_NUMBER' });
    expect(csv.body.failed_authorizers[0].error).toMatch(/^authorizer_unique_id: Expected an identifier of 1 to 255 characters/);
    expect(csv.body.message).toContain('1 authorizer');
    // 255 characters is the bound, in both.
    const bound = 'b'.repeat(255);
    expect((await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer(bound)] } })).status).toBe(201);
    expect((await csvFailures([head, ok(bound)].join('\n'))).body.failed_authorizers).toEqual([]);
  });

  test('a megabyte identifier and a 100,000-character city fail their rows and are not stored', async () => {
    const huge = 'h'.repeat(1_048_576);
    const city = 'c'.repeat(100_000);
    const r = await csvFailures([head, ok(huge), `long-city,123456789,0001234567,110000000,${city},,,`, ok('short-1')].join('\n'));
    expect(r.status).toBe(201);
    expect(JSON.stringify(r.body).length).toBeLessThan(2000);
    const byRow = Object.fromEntries(r.body.failed_authorizers.map((f: { row_number: number; error: string }) => [f.row_number, f.error]));
    expect(byRow[2]).toMatch(/^authorizer_unique_id: /);
    expect(byRow[3]).toBe('city: Expected text of at most 255 characters of well-formed Unicode without control characters');
    expect(r.body.failed_authorizers.find((f: { row_number: number }) => f.row_number === 3).authorizer_unique_id).toBe('long-city');
    const stored = ctx.sql.query('SELECT max(length(items)) AS n FROM batch_payloads WHERE batch_id = ?').get(r.body.batch_id) as { n: number };
    expect(stored.n).toBeLessThan(10_000);
  });

  test('every other limit of the JSON request: phone length, card month range, date of birth year', async () => {
    const r = await csvFailures(
      [head, `p1,123456789,0001234567,110000000,,${'2'.repeat(33)},,`, 'm1,123456789,0001234567,110000000,,,13,', 'd1,123456789,0001234567,110000000,,,,01/02/1800', ok('fine')].join('\n'),
    );
    expect(r.status).toBe(201);
    const byRow = Object.fromEntries(r.body.failed_authorizers.map((f: { row_number: number; error: string }) => [f.row_number, f.error]));
    expect(byRow).toEqual({
      2: 'phone_number: Expected a string of at most 32 characters',
      3: 'expiration_month: Expected an integer from 1 to 12',
      4: 'date_of_birth.year: Expected an integer from 1900 to 2100',
    });
    // The same three in JSON are refused by the same schema.
    for (const [over, path] of [
      [{ phone_number: '2'.repeat(33) }, '/authorizers/0/phone_number'],
      [{ expiration_month: 13 }, '/authorizers/0/expiration_month'],
      [{ date_of_birth: { day: 2, month: 1, year: 1800 } }, '/authorizers/0/date_of_birth/year'],
    ] as const) {
      const json = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers: [bankAuthorizer('j1', over)] } });
      expect(json.status).toBe(400);
      expect(json.body.error.details.errors[0].path).toBe(path);
    }
  });
});
