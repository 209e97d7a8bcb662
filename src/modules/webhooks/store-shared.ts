// What the webhook stores on both engines share (store.sqlite.ts, store.pg.ts): neither imports the other.

/** What an attempt row says while its request is out, and after a crash cut it short. */
export const SENDING = 'sending';
export const CUT_SHORT = 'interrupted: the service stopped while sending; no answer was recorded';
