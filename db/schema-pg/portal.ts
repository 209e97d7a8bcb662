// Generated from db/schema/portal.ts by scripts/pg-schema.ts: change that file and run `bun run db:generate:pg`.
import { index, pgTable, text } from 'drizzle-orm/pg-core';
import { ident, ms } from './columns';
import { lenders } from './lenders';

// The lender portal's dashboard users and their server-side sessions. Every user is a lender admin.
export const dashboardUsers = pgTable(
  'dashboard_users',
  {
    id: ident('id').primaryKey(),
    lenderId: ident('lender_id')
      .notNull()
      .references(() => lenders.id),
    email: text('email').notNull().unique(), // stored lower-case
    displayName: text('display_name').notNull(),
    passwordHash: text('password_hash').notNull(), // argon2id (Bun.password)
    createdAt: ms('created_at').notNull(),
    disabledAt: ms('disabled_at'),
  },
  (t) => [index('dashboard_users_lender_idx').on(t.lenderId)],
);

// A signed-in browser. The cookie holds a random token; only its SHA-256 is stored. It ends after 30 idle
// minutes, at sign-out, or when the user is disabled.
export const portalSessions = pgTable(
  'portal_sessions',
  {
    tokenHash: ident('token_hash').primaryKey(),
    userId: ident('user_id')
      .notNull()
      .references(() => dashboardUsers.id),
    csrfToken: text('csrf_token').notNull(),
    createdAt: ms('created_at').notNull(),
    lastSeenAt: ms('last_seen_at').notNull(),
  },
  (t) => [index('portal_sessions_user_idx').on(t.userId)],
);
