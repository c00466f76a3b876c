/**
 * How much of a run's log the run page reads and draws first (bench/console.bench.ts measures
 * it): the newest TIMELINE_WINDOW events in one read, ROWS_STEP rows drawn; scrolling the
 * timeline to its end draws ROWS_STEP more, then reads OLDER_PAGE older events at a time.
 */

/** Events the run page opens with (the newest ones, a little more than the timeline draws at first). */
export const TIMELINE_WINDOW = 60;
/** Rows the timeline draws at first, and adds each time its end comes into view. */
export const ROWS_STEP = 40;
/** Events per read of older events, as the timeline is scrolled back. */
export const OLDER_PAGE = 500;
