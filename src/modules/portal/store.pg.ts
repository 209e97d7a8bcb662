import { and, asc, eq, isNull } from 'drizzle-orm';
import { dashboardUsers, lenders, portalSessions } from '../../../db/schema-pg';
import { lockFor, readerOf, writerOf } from '../../platform/sql/pg';
import type { PortalStore } from './store';

// Users oldest first, ties (the same millisecond) in the order they were made, as SQLite's rowid order gives
// them: ids are UUIDv7, ordered by creation.
export const pgPortalStore: PortalStore = {
  async emailTaken(c, email) {
    return (await readerOf(c).select({ id: dashboardUsers.id }).from(dashboardUsers).where(eq(dashboardUsers.email, email)).limit(1)).length > 0;
  },
  async userByEmail(c, email) {
    return (await readerOf(c).select().from(dashboardUsers).where(eq(dashboardUsers.email, email)))[0];
  },
  async activeUserByEmail(c, email) {
    return (
      await readerOf(c)
        .select()
        .from(dashboardUsers)
        .where(and(eq(dashboardUsers.email, email), isNull(dashboardUsers.disabledAt)))
    )[0];
  },
  async listUsers(c, lenderId) {
    return readerOf(c)
      .select()
      .from(dashboardUsers)
      .where(eq(dashboardUsers.lenderId, lenderId))
      .orderBy(asc(dashboardUsers.createdAt), asc(dashboardUsers.id));
  },
  async serializeUserCreation(c, email) {
    await lockFor(c, 'dashboard-user', email);
  },
  async insertUser(c, user) {
    await writerOf(c).insert(dashboardUsers).values(user);
  },
  async disableUser(c, userId, at) {
    await writerOf(c).update(dashboardUsers).set({ disabledAt: at }).where(eq(dashboardUsers.id, userId));
  },
  async setPasswordHash(c, userId, passwordHash) {
    await writerOf(c).update(dashboardUsers).set({ passwordHash }).where(eq(dashboardUsers.id, userId));
  },

  async sessionByToken(c, tokenHash) {
    return (
      await readerOf(c)
        .select({ s: portalSessions, u: dashboardUsers, l: lenders })
        .from(portalSessions)
        .innerJoin(dashboardUsers, eq(dashboardUsers.id, portalSessions.userId))
        .innerJoin(lenders, eq(lenders.id, dashboardUsers.lenderId))
        .where(eq(portalSessions.tokenHash, tokenHash))
    )[0];
  },
  async insertSession(c, session) {
    await writerOf(c).insert(portalSessions).values(session);
  },
  async touchSession(c, tokenHash, at) {
    await writerOf(c).update(portalSessions).set({ lastSeenAt: at }).where(eq(portalSessions.tokenHash, tokenHash));
  },
  async deleteSession(c, tokenHash) {
    await writerOf(c).delete(portalSessions).where(eq(portalSessions.tokenHash, tokenHash));
  },
  async deleteUserSessions(c, userId) {
    await writerOf(c).delete(portalSessions).where(eq(portalSessions.userId, userId));
  },
};
