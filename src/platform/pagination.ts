import { createHmac, timingSafeEqual } from 'node:crypto';
import { and, eq, lt, or, type SQL, type SQLWrapper } from 'drizzle-orm';
import { t } from 'elysia';
import { InvalidInput } from './errors';
import type { Vault } from './vault';

// Opaque, tamper-evident page tokens: base64url(JSON position) + "." + HMAC. The scope names the listing
// (lender, endpoint, filters), so a token from one listing is refused by another.

export class PageTokens {
  private readonly key: Buffer;
  constructor(vault: Vault) {
    this.key = vault.derive('page-tokens');
  }

  private mac(scope: string, body: string): string {
    return createHmac('sha256', this.key).update(scope).update('\0').update(body).digest('base64url').slice(0, 22);
  }

  encode(scope: string, position: unknown): string {
    const body = Buffer.from(JSON.stringify(position)).toString('base64url');
    return `${body}.${this.mac(scope, body)}`;
  }

  decode<T>(scope: string, token: string): T {
    const [body, mac] = token.split('.');
    if (!body || !mac) throw invalidToken();
    const expected = Buffer.from(this.mac(scope, body));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalidToken();
    try {
      return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as T;
    } catch {
      throw invalidToken();
    }
  }
}

const invalidToken = () =>
  InvalidInput.field('next_page_token', 'Invalid page token; pass next_page_token exactly as returned');

/** Both spellings the spec uses for the page token; next_page_token wins when both are sent. */
export const pageTokenQuery = {
  next_page_token: t.Optional(t.String({ description: 'Token from the previous page' })),
  nextPageToken: t.Optional(t.String({ description: 'Same as next_page_token' })),
};

export const tokenFrom = (q: { next_page_token?: string; nextPageToken?: string }): string | undefined =>
  q.next_page_token || q.nextPageToken || undefined;

export type PageQuery = { limit?: number; next_page_token?: string; nextPageToken?: string };

/**
 * One page of a keyset listing, the one way every list is paged: the position is read from the page token
 * (scoped to the listing, tamper-evident), `limit + 1` rows are fetched after it to know whether more
 * follow, and the next token holds the position of the last row shown. `moreAnyway` keeps a token coming
 * when the listing may still grow (a batch in progress): it then resumes after the last row seen.
 */
export async function keysetPage<Row, Pos>(opts: {
  tokens: PageTokens;
  scope: string;
  query: PageQuery;
  limit: number;
  /** The position before the first row. */
  start: Pos;
  /** The rows after a position, from the module's store. */
  fetch: (after: Pos, take: number) => Promise<Row[]>;
  positionOf: (row: Row) => Pos;
  moreAnyway?: boolean;
}): Promise<{ page: Row[]; hasMore: boolean; nextPageToken: string | null }> {
  const token = tokenFrom(opts.query);
  const after = token ? opts.tokens.decode<Pos>(opts.scope, token) : opts.start;
  const rows = await opts.fetch(after, opts.limit + 1);
  const page = rows.slice(0, opts.limit);
  const hasMore = rows.length > opts.limit || opts.moreAnyway === true;
  const last = page[page.length - 1];
  const next = last !== undefined ? opts.positionOf(last) : after;
  return { page, hasMore, nextPageToken: hasMore ? opts.tokens.encode(opts.scope, next) : null };
}

/**
 * The rows after a position in a newest-first listing ordered by a time and then an id, both descending:
 * older than `time`, or as old with a smaller id.
 */
export function olderThan(timeColumn: SQLWrapper, idColumn: SQLWrapper, time: number, id: string): SQL {
  return or(lt(timeColumn, time), and(eq(timeColumn, time), lt(idColumn, id)))!;
}
