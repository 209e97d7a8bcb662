// Work in slices bounded by time, not by count: a loop over many rows calls `yieldWhenSpent()` between two of
// them, and gives the event loop a turn (requests, timers, I/O) once it has run for SLICE_MS since the last
// turn it gave. What a row costs varies a hundredfold (a borrower with a long history, a cold page cache, a busy
// machine); a count chosen for the cheap case holds the loop for long in the dear one, a time does not.

/** The synchronous work between two turns of the event loop that a job or a long request allows itself. */
export const SLICE_MS = 4;

let sliceStartedAt = performance.now();

/**
 * Callers waiting for a slice, first come first served: each turn of the event loop gives a new slice to one of
 * them. Had each asked a turn of its own (a setImmediate each), they would all run again in the same turn, a
 * slice each, and hold the loop for as many.
 */
const waiting: (() => void)[] = [];
let turnAsked = false;
function askTurn(): void {
  if (turnAsked) return;
  turnAsked = true;
  setImmediate(() => {
    turnAsked = false;
    sliceStartedAt = performance.now();
    const next = waiting.shift();
    // The next one's slice on the next turn: what the loop has to do in between goes first.
    if (waiting.length > 0) askTurn();
    next?.();
  });
}
const nextSlice = (): Promise<void> =>
  new Promise<void>((resolve) => {
    waiting.push(resolve);
    askTurn();
  });

/** Whether the slice under way has used its time. */
export const sliceSpent = (budgetMs = SLICE_MS): boolean => performance.now() - sliceStartedAt >= budgetMs;

/**
 * A turn of the event loop, then a slice of its own, when the slice under way has used its time; nothing when
 * it has time left. The slice is the process's, not the caller's: jobs and workers working at once share it, as
 * they share the loop, and wait for theirs one per turn.
 */
export const yieldWhenSpent = (budgetMs = SLICE_MS): Promise<void> => (sliceSpent(budgetMs) ? nextSlice() : Promise.resolve());

/** A turn of the event loop now, then a slice of its own. */
export const yieldNow = (): Promise<void> => nextSlice();
