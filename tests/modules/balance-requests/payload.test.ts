import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { compressPacked, openSensitive, packItems, packSensitive, readPacked, unpackItems, unpackSensitive } from '../../../src/modules/balance-requests/payload';
import { Vault, generateVaultKey } from '../../../src/platform/vault';
import { useTestContext } from '../../helpers/context';
import { bankAuthorizer } from '../../helpers/fixtures';
import { processBalances } from '../../../src/modules/balance-requests/processing';
import { newId } from '../../../src/platform/ids';

const str = fc.option(fc.string(), { nil: null });
const num = fc.option(fc.integer({ min: 1, max: 3000 }), { nil: null });

describe('batch payload encoding', () => {
  test('sensitive fields survive a round trip', () => {
    const sensitive = fc.record({
      ssn: str,
      ein: str,
      accountNumber: str,
      debitCardNumber: str,
      cvv: str,
      expirationMonth: num,
      expirationYear: num,
      firstName: str,
      lastName: str,
      dateOfBirth: fc.option(fc.record({ day: fc.integer({ min: 1, max: 31 }), month: fc.integer({ min: 1, max: 12 }), year: fc.integer({ min: 1900, max: 2100 }) }), { nil: null }),
      street: str,
    });
    fc.assert(fc.property(fc.array(sensitive, { maxLength: 20 }), (list) => expect(unpackSensitive(packSensitive(list))).toEqual(list)));
  });

  test('queue items survive a round trip', () => {
    const item = fc.record({
      id: fc.string({ minLength: 1 }),
      type: fc.constantFrom('ACCOUNT_NUMBER' as const, 'DEBIT_CARD' as const),
      routing: str,
      phone: str,
      zip: str,
      meta: fc.option(fc.dictionary(fc.string({ minLength: 1 }), fc.oneof(fc.string(), fc.integer(), fc.boolean())), { nil: null }),
      threshold: fc.option(fc.integer(), { nil: null }),
    });
    fc.assert(fc.property(fc.array(item, { maxLength: 20 }), (list) => expect(unpackItems(packItems(list))).toEqual(list)));
  });

  test('compressed, any text comes back as it was; text stored before compression is read as it is', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        const packed = compressPacked(text);
        expect(readPacked(packed)).toBe(text);
        expect(readPacked(text)).toBe(text);
        // Bytes that are not a zstd frame are UTF-8 text (a sealed payload from before compression).
        expect(readPacked(Buffer.from(text, 'utf8'))).toBe(text);
      }),
    );
  });

  test('a sealed payload opens whether it was compressed before sealing or not', () => {
    const vault = new Vault(generateVaultKey());
    const list = [{ ssn: '123456789', ein: null, accountNumber: '0001234567', debitCardNumber: null, cvv: null, expirationMonth: null, expirationYear: null, firstName: 'Ada', lastName: 'Lovelace', dateOfBirth: { day: 10, month: 12, year: 1985 }, street: '1 Main St' }];
    expect(openSensitive(vault, vault.sealBytes(compressPacked(packSensitive(list))))).toEqual(list);
    expect(openSensitive(vault, vault.seal(packSensitive(list)))).toEqual(list);
  });
});

describe('stored payloads', () => {
  const ctx = useTestContext();

  test('a new batch stores its items and its sealed part compressed, several times smaller than their JSON', async () => {
    const authorizers = Array.from({ length: 200 }, (_, i) => bankAuthorizer(`z-${i}`));
    const r = await ctx.json('POST', '/v1/balance_requests', { body: { authorizers } });
    expect(r.status).toBe(201);
    // The bytes read as hex text, on either engine (psql gives a bytea as text, SQLite a BLOB as bytes).
    const hex = ctx.rt.pg ? "encode(items, 'hex')" : 'hex(items)';
    const stored = ctx.sql.query(`SELECT sealed, ${hex} AS items FROM batch_payloads WHERE batch_id = ?`).get(r.body.batch_id) as { sealed: string; items: string };
    const row = { sealed: stored.sealed, items: new Uint8Array(Buffer.from(stored.items, 'hex')) };
    expect(row.items).toBeInstanceOf(Uint8Array);
    const zstd = (b: Uint8Array) => [...b.subarray(0, 4)].map((x) => x.toString(16)).join(' ');
    expect(zstd(row.items)).toBe('28 b5 2f fd');
    const plaintext = ctx.rt.vault.openBytes(row.sealed);
    expect(zstd(plaintext)).toBe('28 b5 2f fd');
    const items = unpackItems(row.items);
    expect(items.map((i) => i.id)).toEqual(authorizers.map((a) => a.authorizer_unique_id));
    expect(openSensitive(ctx.rt.vault, row.sealed).map((s) => s.accountNumber)).toEqual(authorizers.map((a) => a.account_number));
    expect(row.items.byteLength * 3).toBeLessThan(readPacked(row.items).length);
  });

  test('a batch stored before compression (JSON text, sealed JSON) is still processed', async () => {
    const lenderId = ctx.lender.id;
    const batchId = newId();
    const authorizers = [bankAuthorizer('old-1'), bankAuthorizer('old-2')];
    const sensitive = authorizers.map((a) => ({ ssn: a.ssn.replace(/-/g, ''), ein: null, accountNumber: a.account_number, debitCardNumber: null, cvv: null, expirationMonth: null, expirationYear: null, firstName: null, lastName: null, dateOfBirth: null, street: null }));
    const items = authorizers.map((a) => ({ id: a.authorizer_unique_id, type: 'ACCOUNT_NUMBER' as const, routing: a.routing_number, phone: null, zip: null, meta: null, threshold: null }));
    ctx.sql
      .query(
        `INSERT INTO batches (id, lender_id, source, schedule_id, status, webhook_url, creator, submitted_at, total_authorizers, total_processed)
         VALUES (?, ?, 'api', NULL, 'pending', NULL, NULL, ?, 2, 0)`,
      )
      .run(batchId, lenderId, ctx.rt.clock.now());
    ctx.sql.query('INSERT INTO batch_payloads (batch_id, sealed, items) VALUES (?, ?, ?)').run(batchId, ctx.rt.vault.seal(packSensitive(sensitive)), packItems(items));
    await processBalances(ctx.rt);
    const status = await ctx.json('GET', `/v1/balance_requests/${batchId}`);
    expect(status.body).toMatchObject({ status: 'completed', total_authorizers: 2, total_processed: 2 });
    const balances = await ctx.json('GET', `/v1/balances?batchId=${batchId}`);
    expect(balances.body.balances.map((b: { authorizer_unique_id: string }) => b.authorizer_unique_id).sort()).toEqual(['old-1', 'old-2']);
  });
});
