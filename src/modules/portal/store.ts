import type { dashboardUsers, lenders, portalSessions } from '../../../db/schema';
import type { StoreCtx, TxCtx } from '../../platform/store';

/** A dashboard user as stored (the email lower-case, the password as its argon2id hash). */
export type DashboardUser = typeof dashboardUsers.$inferSelect;
export type PortalSessionRow = typeof portalSessions.$inferSelect;

/** A session with its user and the user's lender. */
export interface SessionRecord {
  s: PortalSessionRow;
  u: DashboardUser;
  l: typeof lenders.$inferSelect;
}

export interface PortalStore {
  /** Whether a user has this (normalized) email. */
  emailTaken(c: StoreCtx, email: string): Promise<boolean>;
  /** The user with this (normalized) email, disabled or not. */
  userByEmail(c: StoreCtx, email: string): Promise<DashboardUser | undefined>;
  /** The user with this (normalized) email, unless disabled. */
  activeUserByEmail(c: StoreCtx, email: string): Promise<DashboardUser | undefined>;
  /** The lender's users, oldest first. */
  listUsers(c: StoreCtx, lenderId: string): Promise<DashboardUser[]>;
  /**
   * Taken before a new user's email is checked and the user stored, held until the transaction ends: two
   * creations with one email at once are one after the other, so the second finds the first. Nothing on SQLite
   * (one writer at a time).
   */
  serializeUserCreation(c: TxCtx, email: string): Promise<void>;
  /** Stores a new user. */
  insertUser(c: TxCtx, user: DashboardUser): Promise<void>;
  /** Marks a user disabled from `at`. */
  disableUser(c: TxCtx, userId: string, at: number): Promise<void>;
  /** Replaces a user's password hash. */
  setPasswordHash(c: TxCtx, userId: string, passwordHash: string): Promise<void>;

  /** A session by its token's hash, with its user and lender. */
  sessionByToken(c: StoreCtx, tokenHash: string): Promise<SessionRecord | undefined>;
  /** Stores a new session. */
  insertSession(c: TxCtx, session: PortalSessionRow): Promise<void>;
  /** Records that a session was used at `at`. */
  touchSession(c: TxCtx, tokenHash: string, at: number): Promise<void>;
  /** Ends one session. */
  deleteSession(c: TxCtx, tokenHash: string): Promise<void>;
  /** Ends every session of a user. */
  deleteUserSessions(c: TxCtx, userId: string): Promise<void>;
}

