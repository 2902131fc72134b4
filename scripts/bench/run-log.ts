/**
 * What the bench says while it runs: progress lines, warnings (kept for the
 * report), the Workers' notable output lines and the client errors outside a
 * call, printed at the end.
 */

import { performance } from "node:perf_hooks";

export function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

export function log(message: string): void {
	console.log(`bench: ${message}`);
}

/** Warnings of the run, at most 20 and each once: the report lists them. */
export const warnings: string[] = [];
export function warn(message: string): void {
	if (warnings.length < 20 && !warnings.includes(message)) warnings.push(message);
	console.warn(`bench: warning: ${message}`);
}

const startedAt = performance.now();
/** Seconds since the bench started, as the log lines give them. */
export function elapsedS(): string {
	return ((performance.now() - startedAt) / 1000).toFixed(0);
}

/** Lines of the Workers' own output that may explain a failure (errors, resets), kept for the end. */
export const notableRuntimeLines: string[] = [];

/** Client-side errors outside a call (e.g. the GET stream breaking), by target and message. */
export const clientErrors = new Map<string, { count: number; first: number; last: number }>();

// The SDK client passes one long-lived AbortSignal to every fetch of a session, and undici
// releases each request's abort listener only when the request is garbage-collected: past
// 1,500 pending listeners Node prints a MaxListenersExceededWarning per call. Harmless (the
// same for every target) but it would bury the output, so it is counted instead.
let suppressedListenerWarnings = 0;
export function countListenerWarnings(): void {
	process.removeAllListeners("warning");
	process.on("warning", (warning) => {
		if (warning.name === "MaxListenersExceededWarning") suppressedListenerWarnings++;
		else console.warn(`${warning.name}: ${warning.message}`);
	});
}

/** The end of the run's log: client errors outside calls, the runtimes' notable lines, the warnings not printed. */
export function logWhatTheRunSaw(): void {
	for (const [key, seen] of clientErrors) {
		warn(`client error outside a call (${seen.count}×, at +${seen.first}…+${seen.last} s): ${key}`);
	}
	for (const line of notableRuntimeLines) log(`runtime output: ${line}`);
	if (suppressedListenerWarnings > 0) {
		log(
			`(${suppressedListenerWarnings} MaxListenersExceededWarning from the SDK client's shared AbortSignal were not printed)`,
		);
	}
}
