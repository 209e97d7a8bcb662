// The one source of "now". Jobs and services read time only through a Clock so tests can move it.
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export class FakeClock implements Clock {
  constructor(private t: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  set(t: number | Date | string): void {
    this.t = typeof t === 'number' ? t : new Date(t).getTime();
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

export const iso = (ms: number): string => new Date(ms).toISOString();
/** A stored time as ISO 8601, or null: none stored, or one no date can be (a provider's as_of of 1e300 read before it was refused). */
export const isoOrNull = (ms: number | null | undefined): string | null => (ms == null || !Number.isFinite(ms) || Math.abs(ms) > 8.64e15 ? null : iso(ms));
export const DAY_MS = 86_400_000;

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A calendar day written YYYY-MM-DD as the millisecond of its midnight UTC, or null when it is not a real day. */
export function parseDate(s: string): number | null {
  if (!DATE.test(s)) return null;
  const ms = Date.parse(`${s}T00:00:00.000Z`);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== s) return null;
  return ms;
}
