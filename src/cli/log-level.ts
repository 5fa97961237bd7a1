/** AIPerf's log levels, quietest last. */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'NOTICE', 'WARNING', 'SUCCESS', 'ERROR', 'CRITICAL'] as const;

/** AIPerf's log levels. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Whether a line at `line` level prints under the chosen `level`. */
export function logs(level: LogLevel, line: LogLevel): boolean {
  return LOG_LEVELS.indexOf(line) >= LOG_LEVELS.indexOf(level);
}
