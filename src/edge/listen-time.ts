import { type Clock, systemClock, systemTimers, type Timers } from "../session/session-do.ts";

/**
 * Where the edge's listening streams read time and set timers (a window's
 * end, the wait before the next window). Tests swap in a clock and timers
 * they move by hand; the edge runs in one isolate with them, so one holder
 * serves every request.
 */
export const listenTime: { clock: Clock; timers: Timers } = { clock: systemClock, timers: systemTimers };
