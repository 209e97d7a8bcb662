// Which key takes a payment: the resolution function against a plain restatement of payments.md section 2,
// over random key sets that keep the stored rules (one default per rail_scope, one key per rail_scope within
// a tag), first as a pure function, then through the database with deleted keys and another lender's keys.
import { afterAll, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import type { Rail, RailScope } from '../../../db/schema/enums';
import { pickKey, resolveKey, type KeyChoice } from '../../../src/modules/payment-connections/resolve';
import { createTestContext } from '../../helpers/context';

const TAGS = ['north', 'south', 'east'];

/** The rules as a reader of the spec would apply them by hand. */
function byTheRules(keys: KeyChoice[], rail: Rail, merchantRef: string | null): string | null {
  if (merchantRef !== null) {
    const tagged = keys.filter((k) => k.merchantRef === merchantRef);
    const exact = tagged.filter((k) => k.railScope === rail);
    if (exact.length > 0) return exact[0]!.id;
    const both = tagged.filter((k) => k.railScope === 'both');
    return both.length > 0 ? both[0]!.id : null;
  }
  const defaults = keys.filter((k) => k.isDefault);
  const specific = defaults.find((k) => k.railScope === rail);
  if (specific) return specific.id;
  return defaults.find((k) => k.railScope === 'both')?.id ?? null;
}

const arbKey = fc.record({
  railScope: fc.constantFrom<RailScope>('ach', 'card', 'both'),
  kind: fc.constantFrom('default', 'tagged', 'unused'),
  tag: fc.constantFrom(...TAGS),
});

/** Random keys, keeping only those the stored rules allow (as the database's unique indexes would). */
const arbKeySet = fc.array(arbKey, { maxLength: 12 }).map((raw) => {
  const out: KeyChoice[] = [];
  raw.forEach((r, i) => {
    const k: KeyChoice = { id: `k${i}`, railScope: r.railScope, isDefault: r.kind === 'default', merchantRef: r.kind === 'tagged' ? r.tag : null };
    const clash = out.some(
      (o) => o.railScope === k.railScope && ((k.isDefault && o.isDefault) || (k.merchantRef !== null && o.merchantRef === k.merchantRef)),
    );
    if (!clash) out.push(k);
  });
  return out;
});

const arbAsk = fc.record({ rail: fc.constantFrom<Rail>('ach', 'card'), merchantRef: fc.option(fc.constantFrom(...TAGS, 'unknown-tag'), { nil: null }) });

describe('key resolution', () => {
  test('pickKey agrees with the rules over random key sets', () => {
    fc.assert(
      fc.property(arbKeySet, arbAsk, (keys, ask) => (pickKey(keys, ask.rail, ask.merchantRef)?.id ?? null) === byTheRules(keys, ask.rail, ask.merchantRef)),
      { numRuns: 2000 },
    );
  });

  test('a tag never falls back to a default, and no tag never takes a tagged key', () => {
    const keys: KeyChoice[] = [
      { id: 'def', railScope: 'both', isDefault: true, merchantRef: null },
      { id: 'shop', railScope: 'card', isDefault: false, merchantRef: 'shop' },
    ];
    expect(pickKey(keys, 'ach', 'shop')).toBeNull();
    expect(pickKey(keys, 'card', null)!.id).toBe('def');
    expect(pickKey(keys, 'card', 'shop')!.id).toBe('shop');
  });

  const ctx = createTestContext();
  afterAll(() => ctx.close());
  const other = ctx.newLender();

  test('resolveKey reads the lender’s live keys only, and agrees with the rules', async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(arbKeySet, arbKeySet, fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }), arbAsk, async (mine, theirs, deleted, ask) => {
        round++;
        // The run's rows in one write.
        const q = (v: string | null) => (v === null ? 'NULL' : `'${v.replaceAll("'", "''")}'`);
        const rows: string[] = [];
        const row = (id: string, lenderId: string, k: KeyChoice, isDefault: boolean, i: number, gone: boolean) =>
          rows.push(`(${q(id)}, ${q(lenderId)}, 'sandbox', 'k', ${q(k.merchantRef)}, ${q(k.railScope)}, ${isDefault ? 1 : 0}, 'sealed', ${i}, ${i}, ${gone ? 1 : 'NULL'})`);
        // A deleted key keeps its row but leaves the rules, so the live set is what must be resolved.
        const live: KeyChoice[] = [];
        mine.forEach((k, i) => {
          const gone = deleted[i]!;
          row(`${round}-m-${k.id}`, ctx.lender.id, k, !gone && k.isDefault, i, gone);
          if (!gone) live.push({ ...k, id: `${round}-m-${k.id}` });
        });
        theirs.forEach((k, i) => row(`${round}-t-${k.id}`, other.id, k, k.isDefault, i, false));
        const write =
          'DELETE FROM payment_connections;' +
          (rows.length === 0
            ? ''
            : `INSERT INTO payment_connections (id, lender_id, processor, label, merchant_ref, rail_scope, is_default, key_sealed, created_at, updated_at, deleted_at) VALUES ${rows.join(', ')};`);
        // On PostgreSQL through the service's own pool: a psql process a run took most of a second on a busy machine.
        if (ctx.rt.pg) await ctx.rt.pg.sql.unsafe(write).simple();
        else ctx.sql.exec(write);
        const got = await resolveKey({ deps: ctx.rt }, { lenderId: ctx.lender.id, ...ask });
        return (got?.id ?? null) === byTheRules(live, ask.rail, ask.merchantRef);
      }),
      { numRuns: 300 },
    );
  });
});
