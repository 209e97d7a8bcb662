// What the portal keeps between two requests of one user besides the session, as the service holds it
// (deps.portal): the interfaces only, so that deps.ts names them without reaching the portal's code.

/** Sign-in attempts, counted before the password is checked (see SignInThrottle for the rules). */
export interface SignInCounter {
  /** Refused when the pair or the address is locked (nothing counted), else counted, with the count that sets the delay. */
  attempt(email: string, address: string, now: number): Promise<{ locked: true } | { locked: false; failures: number }>;
  /** An attempt that signed in: the pair cleared, its reservation given back to the email and the address. */
  succeed(email: string, address: string, now: number): Promise<void>;
  /** The attempts counted that slow the next answer, and whether the pair is locked. */
  status(email: string, address: string, now: number): Promise<{ failures: number; locked: boolean }>;
}

export interface HeldFile {
  id: string;
  bytes: Uint8Array;
  name: string;
  at: number;
}

/**
 * Files checked in the portal, held for their confirmation: one per session, 30 minutes, and at most 16 at once
 * (the oldest goes first; its user is asked to choose the file again). Taking one deletes it: a confirmation
 * records it once.
 */
export interface HeldFiles {
  /** Whether a held file outlives a restart of the process (the user is told when it does not). */
  readonly acrossRestarts: boolean;
  /** Holds the file for the session (replacing the one it held); the id its confirmation names. */
  hold(session: string, file: { bytes: Uint8Array; name: string; at: number }): Promise<string>;
  /** The session's file with this id, no longer held; null when it is not (taken, expired, pushed out, another id). */
  take(session: string, id: string, now: number): Promise<HeldFile | null>;
  /** Files held for longer than 30 minutes deleted. */
  sweep(now: number): Promise<void>;
}

/** What the portal keeps between two requests, of the engine the service runs on. */
export interface PortalState {
  signIns: SignInCounter;
  heldFiles: HeldFiles;
}
