// UUID v7 (time-ordered) for every id the API hands out; random suffixes come from the CSPRNG.
export const newId = (): string => Bun.randomUUIDv7();

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** n characters of base62 with no modulo bias (rejection sampling). */
export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    const bytes = crypto.getRandomValues(new Uint8Array(n * 2));
    for (const b of bytes) {
      if (b < 248) out += BASE62[b % 62];
      if (out.length === n) break;
    }
  }
  return out;
}

export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string): boolean => UUID_PATTERN.test(s);
