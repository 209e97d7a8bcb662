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
export const isoOrNull = (ms: number | null | undefined): string | null => (ms == null ? null : iso(ms));
export const DAY_MS = 86_400_000;
