import { describe, expect, test } from 'bun:test';
import { Writable } from 'node:stream';
import { createLogger, scrubText } from '../../src/platform/logger';
import { balanceProcessingJob } from '../../src/modules/balance-requests/processing';
import { createTestContext, useTestContext } from '../helpers/context';

const SSN = '123-45-6789';
const SSN_FORMS = ['123-45-6789', '123456789', '123 45 6789', '45-6789', '6789'];
const ACCOUNT = '0009876543';
const CARD = '4111111111111111';
const UUID = '019a4f3e-8c1d-7b2a-9f00-1c2d3e4f5a6b';

/** A logger writing into an array, and the parsed lines. */
function capture(level = 'trace') {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  const logger = createLogger(level, sink);
  return { logger, text: () => lines.join(''), json: () => lines.join('').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

/** Waits for a line to be logged; the deadline only ends a test that would otherwise hang. */
async function waitFor(cond: () => boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await Bun.sleep(5);
}

describe('request logging never carries personal data or keys', () => {
  const ctx = useTestContext();

  test('a balance request with an SSN, account and card number, and the API key', async () => {
    const lender = ctx.newLender(undefined, { cards: true });
    const res = await ctx.json('POST', '/v1/balance_requests', {
      key: lender.key,
      body: {
        authorizers: [
          { authorizer_unique_id: 'log-1', ssn: SSN, account_number: ACCOUNT, routing_number: '110000000', first_name: 'Ada', phone_number: '2025550143' },
          { authorizer_unique_id: 'log-2', ssn: SSN, debit_card_number: CARD, expiration_month: 12, expiration_year: 2031, cvv: '123' },
          // Fails validation: its data must not reach a log through the failure either.
          { authorizer_unique_id: 'log-3', ssn: SSN, account_number: ACCOUNT, routing_number: '123456789' },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.failed_authorizers).toHaveLength(1);
    const reqId = res.res.headers.get('x-request-id')!;

    // Process the batch too, so the reads and their logging happen.
    await balanceProcessingJob.tick(ctx.rt, new AbortController().signal);
    const status = await ctx.json('GET', `/v1/balance_requests/${res.body.batch_id}`, { key: lender.key });
    expect(status.body.total_processed).toBe(2);
    const balances = await ctx.json('GET', `/v1/balances?batchId=${res.body.batch_id}`, { key: lender.key });
    expect(balances.status).toBe(200);

    await waitFor(() => ctx.logs.join('').includes(reqId));
    const logged = ctx.logs.join('');
    const lines = logged.trim().split('\n').map((l) => JSON.parse(l));
    const line = lines.find((l) => l.reqId === reqId);
    expect(line).toBeDefined();
    expect(line).toMatchObject({ msg: 'request', method: 'POST', route: '/v1/balance_requests', status: 201, reqId });
    expect(typeof line.duration_ms).toBe('number');
    expect(line.duration_ms).toBeGreaterThanOrEqual(0);
    expect(line.level).toBe('info');

    for (const s of SSN_FORMS) expect(logged).not.toContain(s);
    expect(logged).not.toContain(ACCOUNT);
    expect(logged).not.toContain('9876543');
    expect(logged).not.toContain(CARD);
    expect(logged).not.toContain('4111');
    expect(logged).not.toContain(lender.key);
    expect(logged).not.toContain(lender.key.slice('drs_live_'.length));
  });

  test('a failed authentication logs neither the presented key nor the header', async () => {
    const bogus = 'drs_live_' + 'Q'.repeat(32);
    const res = await ctx.json('GET', '/v1/webhooks/secret', { key: bogus });
    expect(res.status).toBe(401);
    const reqId = res.res.headers.get('x-request-id')!;
    await waitFor(() => ctx.logs.join('').includes(reqId));
    const logged = ctx.logs.join('');
    expect(logged).toContain(reqId);
    expect(logged).not.toContain('Q'.repeat(32));
  });
});

describe('scrubText', () => {
  test('masks SSNs in any formatting', () => {
    for (const s of ['123-45-6789', '123456789', '123 45 6789']) {
      const out = scrubText(`ssn is ${s} here`);
      expect(out).toBe('ssn is [REDACTED] here');
    }
  });

  test('masks account, routing and card numbers', () => {
    expect(scrubText(`account ${ACCOUNT} at 110000000`)).toBe('account [REDACTED] at [REDACTED]');
    expect(scrubText('card 4111 1111 1111 1111 declined')).toBe('card [REDACTED] declined');
    expect(scrubText('card 4111-1111-1111-1111.')).toBe('card [REDACTED].');
    expect(scrubText(`(${ACCOUNT})`)).toBe('([REDACTED])');
  });

  test('masks API keys, webhook secrets, processor keys and bearer tokens', () => {
    const key = 'drs_live_' + 'a1B2'.repeat(8);
    expect(scrubText(`key ${key} used`)).toBe('key drs_live_[REDACTED] used');
    expect(scrubText('secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw!')).toBe('secret whsec_[REDACTED]!');
    expect(scrubText('sk_live_abcDEF123 rk_test_xyz sbx_abc')).toBe('sk_live_[REDACTED] rk_test_[REDACTED] sbx_[REDACTED]');
    expect(scrubText('Authorization: Bearer some.opaque-token')).toBe('Authorization: Bearer [REDACTED]');
    expect(scrubText('authorization: bearer abc')).not.toContain('abc');
  });

  test('leaves UUIDs, identifiers and short numbers intact', () => {
    expect(scrubText(`batch ${UUID} done`)).toBe(`batch ${UUID} done`);
    expect(scrubText('01a1fc63-746a-7615-96f9-0310d15cf9a0')).toBe('01a1fc63-746a-7615-96f9-0310d15cf9a0');
    expect(scrubText('status 404 after 3 tries, code 250')).toBe('status 404 after 3 tries, code 250');
    expect(scrubText('job balance-processing v1 sha256abc123456')).toBe('job balance-processing v1 sha256abc123456');
    expect(scrubText('loan-10012345')).toBe('loan-10012345');
  });
});

describe('createLogger', () => {
  test('redacts sensitive keys at the top level and nested', () => {
    const { logger, text, json } = capture();
    logger.info(
      {
        authorization: 'Bearer drs_live_' + 'x'.repeat(32),
        ssn: SSN,
        account_number: ACCOUNT,
        routing_number: '110000000',
        card_number: CARD,
        headers: { authorization: 'Bearer abc' },
        req: { headers: { authorization: 'Bearer def' } },
        authorizer: { ssn: '987654321', account_number: '12345678', cvv: '123' },
        deep: { inner: { ssn: 111223333, account_number: 44445555 } },
      },
      'checked',
    );
    const [line] = json();
    expect(line.authorization).toBe('[REDACTED]');
    expect(line.ssn).toBe('[REDACTED]');
    expect(line.account_number).toBe('[REDACTED]');
    expect(line.routing_number).toBe('[REDACTED]');
    expect(line.card_number).toBe('[REDACTED]');
    expect(line.headers.authorization).toBe('[REDACTED]');
    expect(line.req.headers.authorization).toBe('[REDACTED]');
    expect(line.authorizer).toEqual({ ssn: '[REDACTED]', account_number: '[REDACTED]', cvv: '[REDACTED]' });
    expect(line.deep.inner).toEqual({ ssn: '[REDACTED]', account_number: '[REDACTED]' });
    const out = text();
    for (const s of [SSN, '123456789', ACCOUNT, CARD, '987654321', '12345678', '111223333', '44445555', 'abc', 'def', 'x'.repeat(32)]) {
      expect(out).not.toContain(s);
    }
    expect(line.msg).toBe('checked');
  });

  test('a child logger’s bindings are scrubbed too', () => {
    const { logger, text, json } = capture();
    const child = logger.child({ ssn: SSN, job: { account_number: ACCOUNT }, note: `card ${CARD}`, batch_id: UUID });
    child.info('child');
    child.child({ ein: '12-3456789' }).info('grandchild');
    const out = text();
    expect(out).not.toContain('3456789');
    for (const s of [SSN, ACCOUNT, CARD]) expect(out).not.toContain(s);
    const [line, grand] = json();
    expect(line.ssn).toBe('[REDACTED]');
    expect(grand.ein).toBe('[REDACTED]');
    expect(line.job.account_number).toBe('[REDACTED]');
    expect(line.batch_id).toBe(UUID);
    expect(line.service).toBe('debit-recovery');
  });

  test('masks digit runs and keys inside messages and free-text fields', () => {
    const { logger, json } = capture();
    logger.warn(`read failed for account ${ACCOUNT} ssn ${SSN}`);
    logger.info({ note: `card ${CARD} with key drs_live_${'k'.repeat(32)}` }, 'x');
    logger.error({ err: new Error(`provider said no for ${ACCOUNT}`) }, 'failed %s', SSN);
    const [a, b, c] = json();
    expect(a.msg).toBe('read failed for account [REDACTED] ssn [REDACTED]');
    expect(b.note).toBe('card [REDACTED] with key drs_live_[REDACTED]');
    expect(JSON.stringify(c)).not.toContain(ACCOUNT);
    expect(JSON.stringify(c)).not.toContain(SSN);
    expect(c.err.message).toBe('provider said no for [REDACTED]');
    // The stack is there for the operator, scrubbed like the message.
    expect(c.err.stack).toStartWith('Error: provider said no for [REDACTED]');
  });

  test('leaves UUIDs and safe identifiers intact', () => {
    const { logger, json } = capture();
    logger.info({ reqId: UUID, batch_id: UUID, route: '/v1/balances', status: 200, duration_ms: 12.5 }, `batch ${UUID} completed`);
    const [line] = json();
    expect(line.reqId).toBe(UUID);
    expect(line.batch_id).toBe(UUID);
    expect(line.msg).toBe(`batch ${UUID} completed`);
    expect(line.status).toBe(200);
    expect(line.duration_ms).toBe(12.5);
  });

  test('respects the level and writes ISO timestamps and the level label', () => {
    const { logger, json } = capture('warn');
    logger.info('hidden');
    logger.warn('shown');
    const lines = json();
    expect(lines).toHaveLength(1);
    expect(lines[0].level).toBe('warn');
    expect(lines[0].time).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(lines[0].service).toBe('debit-recovery');
  });

  test('arrays of authorizers are scrubbed too', () => {
    const { logger, text } = capture();
    logger.info({ body: { authorizers: [{ authorizer_unique_id: 'a1', ssn: SSN, account_number: ACCOUNT }] } }, 'body');
    const out = text();
    expect(out).not.toContain(SSN);
    expect(out).not.toContain(ACCOUNT);
    expect(out).toContain('a1');
  });

  test('a sensitive key holding a number is redacted at any depth', () => {
    const { logger, text } = capture();
    logger.info({ job: { item: { authorizer: { ssn: 987654321, account_number: 55556666, date_of_birth: { day: 9, month: 8, year: 1977 } } } } }, 'nested');
    const out = text();
    expect(out).not.toContain('987654321');
    expect(out).not.toContain('55556666');
    expect(out).not.toContain('1977');
  });

  test('deeply nested objects never let a value through unscrubbed', () => {
    const { logger, text } = capture();
    logger.info({ l1: { l2: { l3: { l4: { l5: { l6: { l7: { l8: { note: `ssn ${SSN} acct ${ACCOUNT}` } } } } } } } } }, 'deep');
    const out = text();
    expect(out).not.toContain(SSN);
    expect(out).not.toContain(ACCOUNT);
  });
});

describe('unhandled errors are logged with their real error, never a body', () => {
  test('an error is logged with its class, message, code, stack and cause', () => {
    const { logger, json } = capture();
    const cause = new RangeError('inner cause');
    const err = Object.assign(new TypeError('outer failure', { cause }), { code: 'E_OUTER' });
    logger.error({ err }, 'unhandled error');
    const line = json()[0];
    expect(line.err.type).toBe('TypeError');
    expect(line.err.message).toBe('outer failure');
    expect(line.err.code).toBe('E_OUTER');
    expect(line.err.stack).toContain('TypeError: outer failure');
    expect(line.err.stack).toMatch(/\n\s+at /);
    expect(line.err.cause).toMatchObject({ type: 'RangeError', message: 'inner cause' });
  });

  test('what an error object carries besides (a submitted value, a body) is never logged', () => {
    const { logger, text } = capture();
    const err = Object.assign(new Error('validation failed'), { value: { note: 'BODY-MARKER' }, body: 'BODY-MARKER', found: 'BODY-MARKER' });
    logger.error({ err }, 'unhandled error');
    expect(text()).toContain('validation failed');
    expect(text()).not.toContain('BODY-MARKER');
  });

  test('a 500 on a route logs the database error with its stack and the request id; the body sent is not in the log', async () => {
    const broken = createTestContext();
    try {
      broken.sql.exec('DROP TABLE idempotency_keys');
      const res = await broken.request('POST', '/v1/balance_requests', {
        body: { authorizers: [{ authorizer_unique_id: 'log-500', ssn: SSN, account_number: ACCOUNT, routing_number: '110000000', first_name: 'BODYNAME' }] },
      });
      expect(res.status).toBe(500);
      const reqId = res.headers.get('x-request-id')!;
      await waitFor(() => broken.logs.join('').includes('unhandled error'));
      const line = broken.logs
        .join('')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .find((l) => l.msg === 'unhandled error');
      expect(line.reqId).toBe(reqId);
      expect(line.route).toBe('/v1/balance_requests');
      if (broken.rt.pg) {
        // The failed statement, with the server's error as its cause.
        expect(line.err.type).toBe('DrizzleQueryError');
        expect(line.err.cause).toMatchObject({ type: 'PostgresError', message: 'relation "idempotency_keys" does not exist' });
      } else expect(line.err.type).toBe('SQLiteError');
      expect(line.err.message).toContain('idempotency_keys');
      expect(line.err.stack).toMatch(/\n\s+at /);
      const all = broken.logs.join('');
      for (const leak of [SSN, ACCOUNT, 'BODYNAME', 'log-500']) expect(all).not.toContain(leak);
    } finally {
      broken.close();
    }
  });
});
