/** Severity of a log line. */
export type LogLevel = 'info' | 'warn' | 'error';

/** Writes one structured log line: CloudWatch Logs Insights can query its fields. */
export type Log = (level: LogLevel, message: string, fields?: Readonly<Record<string, unknown>>) => void;

/** A {@link Log} that prints one JSON object per line through `write` (stdout by default, which Lambda ships to CloudWatch). */
export function jsonLog(write: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): Log {
  return (level, message, fields = {}) => write(JSON.stringify({ level, message, ...fields }));
}
