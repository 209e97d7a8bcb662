import { FormatRegistry } from '@sinclair/typebox';

// TypeBox checks a string's `format` through one process-wide registry. Importing @elysiajs/openapi replaces
// several of Elysia's entries (uuid, date, email, url and others) with checks that build a new zod schema on
// every call: tens of microseconds for each uuid in every answer checked against its schema. The formats the
// API's schemas use are put back as plain patterns here, after that import. A date is a real calendar day.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

export const isUuid = (value: string): boolean => UUID.test(value);

export function isCalendarDate(value: string): boolean {
  const m = DATE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const at = new Date(Date.UTC(y, mo - 1, d));
  return at.getUTCFullYear() === y && at.getUTCMonth() === mo - 1 && at.getUTCDate() === d;
}

export function restoreFormats(): void {
  FormatRegistry.Set('uuid', isUuid);
  FormatRegistry.Set('date', isCalendarDate);
}
