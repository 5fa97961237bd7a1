/** Unit tests under src/ that start servers, sockets, subprocesses or real timers (run with test/'s live files). */
export const REAL_TIME_SRC: ReadonlySet<string>;
/** Files in test/ that start no server and read no clock. */
export const PURE_TEST: ReadonlySet<string>;
/** Files whose figures a neighbour's CPU can move: run alone, after the rest. */
export const ALONE: ReadonlySet<string>;
