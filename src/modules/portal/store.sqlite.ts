import { and, asc, eq, isNull } from 'drizzle-orm';
import { dashboardUsers, lenders, portalSessions } from '../../../db/schema';
import type { Db } from '../../platform/db';
import { lockFor, readerOf, writerOf } from '../../platform/sql/sqlite';
import type { PortalStore, SessionRecord } from './store';

const sessionByToken = (db: Db, tokenHash: string): SessionRecord | undefined =>
  db
    .select({ s: portalSessions, u: dashboardUsers, l: lenders })
    .from(portalSessions)
    .innerJoin(dashboardUsers, eq(dashboardUsers.id, portalSessions.userId))
    .innerJoin(lenders, eq(lenders.id, dashboardUsers.lenderId))
    .where(eq(portalSessions.tokenHash, tokenHash))
    .get();

export const sqlitePortalStore: PortalStore = {
  async emailTaken(c, email) {
    return readerOf(c).select({ id: dashboardUsers.id }).from(dashboardUsers).where(eq(dashboardUsers.email, email)).get() !== undefined;
  },
  async userByEmail(c, email) {
    return readerOf(c).select().from(dashboardUsers).where(eq(dashboardUsers.email, email)).get();
  },
  async activeUserByEmail(c, email) {
    return readerOf(c)
      .select()
      .from(dashboardUsers)
      .where(and(eq(dashboardUsers.email, email), isNull(dashboardUsers.disabledAt)))
      .get();
  },
  async listUsers(c, lenderId) {
    return readerOf(c).select().from(dashboardUsers).where(eq(dashboardUsers.lenderId, lenderId)).orderBy(asc(dashboardUsers.createdAt)).all();
  },
  // One writer at a time: the transaction that checks already runs alone.
  async serializeUserCreation(c, email) {
    await lockFor(c, 'dashboard-user', email);
  },
  async insertUser(c, user) {
    writerOf(c).insert(dashboardUsers).values(user).run();
  },
  async disableUser(c, userId, at) {
    writerOf(c).update(dashboardUsers).set({ disabledAt: at }).where(eq(dashboardUsers.id, userId)).run();
  },
  async setPasswordHash(c, userId, passwordHash) {
    writerOf(c).update(dashboardUsers).set({ passwordHash }).where(eq(dashboardUsers.id, userId)).run();
  },

  async sessionByToken(c, tokenHash) {
    return sessionByToken(readerOf(c), tokenHash);
  },
  async insertSession(c, session) {
    writerOf(c).insert(portalSessions).values(session).run();
  },
  async touchSession(c, tokenHash, at) {
    writerOf(c).update(portalSessions).set({ lastSeenAt: at }).where(eq(portalSessions.tokenHash, tokenHash)).run();
  },
  async deleteSession(c, tokenHash) {
    writerOf(c).delete(portalSessions).where(eq(portalSessions.tokenHash, tokenHash)).run();
  },
  async deleteUserSessions(c, userId) {
    writerOf(c).delete(portalSessions).where(eq(portalSessions.userId, userId)).run();
  },
};
