/** A lender refused: its name not allowed, or already taken. */
export class LenderError extends Error {}
