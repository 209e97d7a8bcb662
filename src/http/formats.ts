import { FormatRegistry } from '@sinclair/typebox';
import { parseDate } from '../platform/clock';

// TypeBox checks a string's `format` through one process-wide registry. Importing @elysiajs/openapi replaces
// several of Elysia's entries (uuid, date, email, url and others) with checks that build a new zod schema on
// every call: tens of microseconds for each uuid in every answer checked against its schema. The formats the
// API's schemas use are put back as plain patterns here, after that import. A date is a real calendar day.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => UUID.test(value);

export const isCalendarDate = (value: string): boolean => parseDate(value) !== null;

export function restoreFormats(): void {
  FormatRegistry.Set('uuid', isUuid);
  FormatRegistry.Set('date', isCalendarDate);
}
