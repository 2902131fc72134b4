/**
 * The connector's log: one line per event on stderr, for a terminal or a
 * service's journal. Never a request's body or a header's value: the
 * connector carries other people's calls and credentials.
 */
export function logLine(message: string): void {
	process.stderr.write(`mcpgw connect: ${message}\n`);
}

/** A duration as a person reads it in a log line: "350 ms", "2.5 s", "12 s". */
export function seconds(ms: number): string {
	const value = ms / 1000;
	if (ms < 1000) return `${Math.round(ms)} ms`;
	return `${value < 10 ? value.toFixed(1) : Math.round(value)} s`;
}
