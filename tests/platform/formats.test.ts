import { describe, expect, test } from 'bun:test';
import { FormatRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { t } from 'elysia';
import '../../src/app';
import { isCalendarDate, isUuid } from '../../src/http/formats';

// The app imports @elysiajs/openapi, which replaces TypeBox's uuid and date checks with ones that build a zod
// schema on every call; the service puts plain checks back. These hold with the whole app loaded.
describe('string formats with the app loaded', () => {
  test('uuid: a plain pattern check', () => {
    expect(FormatRegistry.Get('uuid')).toBe(isUuid);
    const uuid = isUuid;
    expect(uuid('01a21192-f3a6-76df-8055-67daa74472ce')).toBe(true);
    expect(uuid('01A21192-F3A6-76DF-8055-67DAA74472CE')).toBe(true);
    for (const bad of ['', 'not-a-uuid', '01a21192-f3a6-76df-8055-67daa74472c', '01a21192f3a676df805567daa74472ce', ' 01a21192-f3a6-76df-8055-67daa74472ce']) {
      expect(uuid(bad)).toBe(false);
    }
  });

  test('date: a calendar day written YYYY-MM-DD', () => {
    expect(FormatRegistry.Get('date')).toBe(isCalendarDate);
    for (const ok of ['2026-11-25', '2028-02-29', '2000-02-29', '1999-12-31']) expect(isCalendarDate(ok)).toBe(true);
    for (const bad of ['2026-02-29', '1900-02-29', '2026-13-01', '2026-04-31', '2026-11-5', '26-11-25', '2026-11-25T00:00:00Z', '']) expect(isCalendarDate(bad)).toBe(false);
  });

  test('a schema with these formats checks values through them', () => {
    const s = t.Object({ id: t.String({ format: 'uuid' }), on: t.String({ format: 'date' }) });
    expect(Value.Check(s, { id: '01a21192-f3a6-76df-8055-67daa74472ce', on: '2026-11-25' })).toBe(true);
    expect(Value.Check(s, { id: 'x', on: '2026-11-25' })).toBe(false);
    expect(Value.Check(s, { id: '01a21192-f3a6-76df-8055-67daa74472ce', on: '2026-02-30' })).toBe(false);
  });
});
