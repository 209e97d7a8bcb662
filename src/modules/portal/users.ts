import { transaction } from '../../platform/context';
import { newId } from '../../platform/ids';
import { isText, textExpected } from '../../platform/fields';
import type { StoreCtx } from '../../platform/store';
import { type DashboardUser } from './store';

// Dashboard users: operator functions (the CLI) and the sign-in check. Every user is a lender admin.

/** What the users' functions work with: the database's connections (the service's deps, or the CLI's handle). */
type UserDeps = StoreCtx['deps'];

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

export type { DashboardUser } from './store';

/** The longest password: enough for any passphrase, and a bound on what a sign-in hashes. */
export const MAX_PASSWORD_LENGTH = 1024;

function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw new UserError(`A password has at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new UserError(`A password has at most ${MAX_PASSWORD_LENGTH} characters`);
}

export async function createUser(deps: UserDeps, input: { lenderId: string; email: string; displayName: string; password: string; now: number }): Promise<DashboardUser> {
  const email = normalizeEmail(input.email);
  if (!EMAIL.test(email)) throw new UserError('Not an email address');
  const displayName = input.displayName.trim();
  if (!isText(displayName, 80, 1)) throw new UserError(`A display name is ${textExpected(1, 80)}`);
  checkPassword(input.password);
  if (await deps.stores.portal.emailTaken({ deps }, email)) {
    throw new UserError(`A user with the email ${email} already exists`);
  }
  const user: DashboardUser = {
    id: newId(),
    lenderId: input.lenderId,
    email,
    displayName,
    passwordHash: await Bun.password.hash(input.password, { algorithm: 'argon2id' }),
    createdAt: input.now,
    disabledAt: null,
  };
  // Checked again where it counts: another creation with this email may have been stored while the password was hashed.
  await transaction({ deps }, async (tx) => {
    await tx.deps.stores.portal.serializeUserCreation(tx, email);
    if (await tx.deps.stores.portal.emailTaken(tx, email)) throw new UserError(`A user with the email ${email} already exists`);
    await tx.deps.stores.portal.insertUser(tx, user);
  });
  return user;
}

export const listUsers = (deps: UserDeps, lenderId: string): Promise<DashboardUser[]> => deps.stores.portal.listUsers({ deps }, lenderId);

export function findUserByEmail(deps: UserDeps, email: string): Promise<DashboardUser | undefined> {
  return deps.stores.portal.userByEmail({ deps }, normalizeEmail(email));
}

/** Disabling ends the user's sessions at once. */
export async function disableUser(deps: UserDeps, email: string, now: number): Promise<boolean> {
  const user = await findUserByEmail(deps, email);
  if (!user) return false;
  await transaction({ deps }, async (tx) => {
    await tx.deps.stores.portal.disableUser(tx, user.id, user.disabledAt ?? now);
    await tx.deps.stores.portal.deleteUserSessions(tx, user.id);
  });
  return true;
}

/** A new password ends every session of the user. */
export async function resetPassword(deps: UserDeps, email: string, password: string): Promise<boolean> {
  checkPassword(password);
  const user = await findUserByEmail(deps, email);
  if (!user) return false;
  const hash = await Bun.password.hash(password, { algorithm: 'argon2id' });
  await transaction({ deps }, async (tx) => {
    await tx.deps.stores.portal.setPasswordHash(tx, user.id, hash);
    await tx.deps.stores.portal.deleteUserSessions(tx, user.id);
  });
  return true;
}

// A fixed hash to verify against when the email is unknown, so a wrong email and a wrong password take as long.
let decoy: Promise<string> | null = null;

/** The active user with this email and password, or null (the same answer for a wrong email or password). */
export async function verifySignIn(deps: UserDeps, email: string, password: string): Promise<DashboardUser | null> {
  const user = await deps.stores.portal.activeUserByEmail({ deps }, normalizeEmail(email));
  decoy ??= Bun.password.hash('not a password of anyone', { algorithm: 'argon2id' });
  const ok = await Bun.password.verify(password, user?.passwordHash ?? (await decoy));
  return user && ok ? user : null;
}
