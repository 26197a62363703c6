type Schedule = (f: () => void) => unknown;
const immediate = (globalThis as { setImmediate?: Schedule }).setImmediate;

/**
 * Runs `f` once the current turn of the event loop is over, after the I/O callbacks
 * already due: a burst that one socket read delivered is handled whole before `f`.
 * Browsers have no setImmediate; there a 0 ms timeout is the nearest equivalent.
 */
export const nextTurn: (f: () => void) => void = immediate ? (f) => void immediate(f) : (f) => void setTimeout(f, 0);
