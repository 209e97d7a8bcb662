import { BANK_ACCOUNT_STATES } from '../../../db/schema/enums';
import { DAY_MS } from '../../platform/clock';

// What both engines' ACH report stores share: a Notification of Change's timeliness as SQL (store.ts says what
// each value means), and the blocking states as a list. `now` is the engine's placeholder for the report's time.

/** The end of due_by's UTC day: a change applied before it was applied by its due day. */
const DUE_DAY_END = `(due_by - due_by % ${DAY_MS} + ${DAY_MS})`;

/** `CASE … END`: on_time, late, overdue, pending or none, as of `now`. */
export const timelinessOf = (now: string): string =>
  `CASE WHEN applied_at IS NOT NULL THEN (CASE WHEN applied_at < ${DUE_DAY_END} THEN 'on_time' ELSE 'late' END)
        WHEN status = 'recorded' THEN 'none'
        WHEN ${now} >= ${DUE_DAY_END} THEN 'overdue'
        ELSE 'pending' END`;

/** `'invalid', 'frozen', …`: every state but ok, for an IN list the state index answers (a seek each). */
export const BLOCKING_STATES = BANK_ACCOUNT_STATES.filter((s) => s !== 'ok')
  .map((s) => `'${s}'`)
  .join(', ');
