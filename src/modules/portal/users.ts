import { transaction } from '../../platform/context';
import { and, asc, eq, isNull } from 'drizzle-orm';
import { dashboardUsers, portalSessions } from '../../../db/schema';
import type { Db } from '../../platform/db';
import { newId } from '../../platform/ids';
import { isText, textExpected } from '../../platform/fields';

// Dashboard users: operator functions (the CLI) and the sign-in check. Every user is a lender admin.

export const MIN_PASSWORD_LENGTH = 12;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export class UserError extends Error {}

// Unicode White_Space, and the byte-order mark a paste can carry: what an email's ends may hold and still name it.
const BLANK = /[\p{White_Space}\uFEFF]/u;

/**
 * The one form of an email that names a user: every Unicode white space trimmed from both ends (tabs, NBSP,
 * U+3000 and the rest, not only ASCII spaces) and case folded. Creating a user, the sign-in look-up and the
 * sign-in throttle all use it, so a variant of an email is the same user and the same throttle bucket.
 */
export function normalizeEmail(email: string): string {
  // A scan from each end instead of an anchored regex, which would be quadratic on a long run of blanks.
  let start = 0;
  let end = email.length;
  while (start < end && BLANK.test(email[start]!)) start++;
  while (end > start && BLANK.test(email[end - 1]!)) end--;
  return email.slice(start, end).toLowerCase();
}

export type DashboardUser = typeof dashboardUsers.$inferSelect;

/** The longest password: enough for any passphrase, and a bound on what a sign-in hashes. */
export const MAX_PASSWORD_LENGTH = 1024;

function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw new UserError(`A password has at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new UserError(`A password has at most ${MAX_PASSWORD_LENGTH} characters`);
}

export async function createUser(db: Db, input: { lenderId: string; email: string; displayName: string; password: string; now: number }): Promise<DashboardUser> {
  const email = normalizeEmail(input.email);
  if (!EMAIL.test(email)) throw new UserError('Not an email address');
  const displayName = input.displayName.trim();
  if (!isText(displayName, 80, 1)) throw new UserError(`A display name is ${textExpected(1, 80)}`);
  checkPassword(input.password);
  if (db.select({ id: dashboardUsers.id }).from(dashboardUsers).where(eq(dashboardUsers.email, email)).get()) {
    throw new UserError(`A user with the email ${email} already exists`);
  }
  const user = {
    id: newId(),
    lenderId: input.lenderId,
    email,
    displayName,
    passwordHash: await Bun.password.hash(input.password, { algorithm: 'argon2id' }),
    createdAt: input.now,
    disabledAt: null,
  };
  await transaction({ deps: { db } }, ({ tx }) => tx.insert(dashboardUsers).values(user).run());
  return user;
}

export const listUsers = (db: Db, lenderId: string) =>
  db.select().from(dashboardUsers).where(eq(dashboardUsers.lenderId, lenderId)).orderBy(asc(dashboardUsers.createdAt)).all();

export function findUserByEmail(db: Db, email: string): DashboardUser | undefined {
  return db.select().from(dashboardUsers).where(eq(dashboardUsers.email, normalizeEmail(email))).get();
}

/** Disabling ends the user's sessions at once. */
export async function disableUser(db: Db, email: string, now: number): Promise<boolean> {
  const user = findUserByEmail(db, email);
  if (!user) return false;
  await transaction({ deps: { db } }, ({ tx }) => {
    tx.update(dashboardUsers).set({ disabledAt: user.disabledAt ?? now }).where(eq(dashboardUsers.id, user.id)).run();
    tx.delete(portalSessions).where(eq(portalSessions.userId, user.id)).run();
  });
  return true;
}

/** A new password ends every session of the user. */
export async function resetPassword(db: Db, email: string, password: string): Promise<boolean> {
  checkPassword(password);
  const user = findUserByEmail(db, email);
  if (!user) return false;
  const hash = await Bun.password.hash(password, { algorithm: 'argon2id' });
  await transaction({ deps: { db } }, ({ tx }) => {
    tx.update(dashboardUsers).set({ passwordHash: hash }).where(eq(dashboardUsers.id, user.id)).run();
    tx.delete(portalSessions).where(eq(portalSessions.userId, user.id)).run();
  });
  return true;
}

// A fixed hash to verify against when the email is unknown, so a wrong email and a wrong password take as long.
let decoy: Promise<string> | null = null;

/** The active user with this email and password, or null (the same answer for a wrong email or password). */
export async function verifySignIn(db: Db, email: string, password: string): Promise<DashboardUser | null> {
  const user = db
    .select()
    .from(dashboardUsers)
    .where(and(eq(dashboardUsers.email, normalizeEmail(email)), isNull(dashboardUsers.disabledAt)))
    .get();
  decoy ??= Bun.password.hash('not a password of anyone', { algorithm: 'argon2id' });
  const ok = await Bun.password.verify(password, user?.passwordHash ?? (await decoy));
  return user && ok ? user : null;
}
