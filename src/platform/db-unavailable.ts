// Whether an error is the database being out of reach rather than a fault of the request: PostgreSQL down,
// restarting or refusing connections, a connection cut mid-statement; SQLite's file locked past the busy
// timeout by another process, or unreadable. A request that meets one is answered 503 with Retry-After, so that
// a client (a lender removing a borrower) knows to send it again; anything else stays a 500.

/** SQLSTATEs of a server that cannot serve now: connection exceptions, shutdown, too many connections. */
const PG_UNAVAILABLE_STATES = /^(08...|57P0[1-3]|53300|53400|58030)$/;
/** Bun SQL's codes for a connection that could not be made or was lost. */
const PG_CONNECTION_CODES = /^ERR_POSTGRES_(CONNECTION_|IDLE_TIMEOUT|LIFETIME_TIMEOUT|AUTHENTICATION_FAILED_|TLS_)/;
/** SQLite's codes for a file that cannot be used now (locked by another process past the busy timeout, unreadable, full). */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY)/;
/** A socket that would not connect or was reset (the driver's own error, or a wrapped one). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ConnectionRefused', 'ConnectionClosed']);

export function isDatabaseUnavailable(e: unknown): boolean {
  // The driver's error may be wrapped (drizzle's "Failed query", a transaction's own): its causes are read too.
  for (let cur = e, depth = 0; cur && typeof cur === 'object' && depth < 5; cur = (cur as { cause?: unknown }).cause, depth++) {
    const { code, errno } = cur as { code?: unknown; errno?: unknown };
    if (typeof errno === 'string' && PG_UNAVAILABLE_STATES.test(errno)) return true;
    if (typeof code === 'string' && (PG_CONNECTION_CODES.test(code) || SQLITE_UNAVAILABLE.test(code) || SOCKET_CODES.has(code))) return true;
  }
  return false;
}

/** Seconds a client is told to wait before sending a request the database could not serve. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;
