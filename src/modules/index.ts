import type { Elysia } from 'elysia';
import type { Deps } from '../platform/deps';
import type { Job } from '../platform/jobs';
import type { authPlugin } from '../platform/auth';

export type Auth = ReturnType<typeof authPlugin>;

/** Every feature's routes, mounted by createApp. */
export function featureRoutes(_deps: Deps, _auth: Auth): Elysia<any, any, any, any, any, any, any>[] {
  return [];
}

/** Every feature's jobs, started by index.ts. */
export function featureJobs(): Job[] {
  return [];
}
