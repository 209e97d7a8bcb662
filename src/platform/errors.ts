// Domain errors: what went wrong, in the service's own terms. Services and jobs throw these; they carry no
// HTTP status. The HTTP edge (src/http/errors.ts) maps each class to a status and code in one table.
// Elysia reads a `.code` property of thrown errors itself, so none of these has one; match with instanceof.

export interface FieldProblem {
  path: string;
  message: string;
}

export abstract class DomainError extends Error {
  constructor(
    message: string,
    readonly details?: Record<string, unknown>,
    readonly suggestion?: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The input breaks a rule; `details.errors` lists `{path, message}` when the problem has a place. */
export class InvalidInput extends DomainError {
  static field(path: string, message: string, suggestion?: string): InvalidInput {
    return new InvalidInput(message, { errors: [{ path, message }] }, suggestion);
  }
  static fields(message: string, errors: FieldProblem[], extra: Record<string, unknown> = {}): InvalidInput {
    return new InvalidInput(message, { ...extra, errors });
  }
  /** Refuses a request body with every shape problem found in it, the first one in the message. */
  static refuseBody(problems: FieldProblem[]): void {
    if (problems.length === 0) return;
    const first = problems[0]!;
    throw InvalidInput.fields(`Invalid request body: ${first.path || '/'} ${first.message}`, problems);
  }
}

/** No such object for this lender (another lender's object is not found either). */
export class NotFound extends DomainError {
  constructor(
    readonly entity: string,
    readonly id?: string,
  ) {
    super(`${entity} not found`);
  }
}

/** The request clashes with the state of what is stored (a name in use, a second default). */
export class Conflict extends DomainError {}

/** The caller may not have this, although it exists (the CSV export of another lender's batch). */
export class Forbidden extends DomainError {}

/** No valid credentials. */
export class Unauthenticated extends DomainError {
  constructor(message = 'A valid API key is required', suggestion = 'Send the header Authorization: Bearer <API_KEY>') {
    super(message, undefined, suggestion);
  }
}

/** Too many requests from one caller; try again after `retryAfterSeconds`. */
export class RateLimited extends DomainError {
  constructor(
    readonly retryAfterSeconds: number,
    message = 'Too many requests',
    suggestion = `Retry after ${retryAfterSeconds} seconds`,
  ) {
    super(message, undefined, suggestion);
  }
}

/** Something the service depends on (a processor, the bank-data source) cannot be reached now. */
export class Unavailable extends DomainError {}
