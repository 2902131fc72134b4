/** Figures as the report writes them, and the table rows its 2025 sections share. */

import {
	type CpuUse,
	type GatewayEndpoint,
	TARGET_LABELS,
	type TargetId,
	type Throughput,
	type ThroughputCell,
} from "./results.ts";

/** Nearest-rank percentile of unsorted samples; NaN for none. */
export function percentile(samples: readonly number[], p: number): number {
	if (samples.length === 0) return Number.NaN;
	const sorted = [...samples].sort((a, b) => a - b);
	const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
	return sorted[rank - 1] ?? Number.NaN;
}

export function mean(samples: readonly number[]): number {
	return samples.length === 0 ? Number.NaN : samples.reduce((sum, x) => sum + x, 0) / samples.length;
}

export function rate(result: Throughput): number {
	return result.ms > 0 ? (result.calls * 1000) / result.ms : Number.NaN;
}

export function ms(value: number): string {
	if (!Number.isFinite(value)) return "n/a";
	return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

export function signedMs(value: number): string {
	if (!Number.isFinite(value)) return "n/a";
	return `${value >= 0 ? "+" : "−"}${ms(Math.abs(value))}`;
}

export function ratio(value: number): string {
	return Number.isFinite(value) ? `${value.toFixed(2)}×` : "n/a";
}

export function perSecond(value: number): string {
	return Number.isFinite(value) ? Math.round(value).toLocaleString("en-US") : "n/a";
}

export function kib(bytes: number): string {
	return `${(bytes / 1024).toFixed(1)} KiB`;
}

export function per1000(count: number, calls: number): string {
	return calls > 0 ? ((count * 1000) / calls).toFixed(2) : "n/a";
}

export function seconds(msValue: number, digits = 1): string {
	return `${(msValue / 1000).toFixed(digits)} s`;
}

/** Allowed count for "at most one per interval elapsed": ceil(elapsed / interval), at least 1. */
export function allowance(elapsedMs: number, intervalS: number): number {
	return Math.max(1, Math.ceil(elapsedMs / (intervalS * 1000)));
}

export function cellLabel(cell: ThroughputCell): string {
	return `c=${cell.concurrency}, ${cell.sessions === 1 ? "1 session" : `${cell.sessions} sessions`}`;
}

/** A target's status in the report. */
export const MET = "met";
export const NOT_MET = "**not met**";

export function serverCpuPerCall(use: CpuUse): number {
	return use.calls > 0 ? (use.upstreamMs + use.runtimeMs) / use.calls : Number.NaN;
}

export function endpointName(endpoint: GatewayEndpoint): string {
	return endpoint === "server" ? "/mcp/:server" : "/mcp";
}

export function ratioRow(label: string, value: (t: TargetId) => number): string {
	return `| ${label} | ${ratio(value("server") / value("direct"))} | ${ratio(value("server") / value("floor"))} | ${ratio(value("aggregate") / value("direct"))} | ${ratio(value("aggregate") / value("floor"))} |`;
}

export function latencyLine(t: TargetId, samples: number[], floor: number[], withDelta: boolean): string {
	const delta = (p: number) =>
		withDelta && t !== "floor" ? signedMs(percentile(samples, p) - percentile(floor, p)) : "";
	return `| ${TARGET_LABELS[t]} | ${samples.length} | ${ms(percentile(samples, 50))} | ${ms(percentile(samples, 95))} | ${ms(percentile(samples, 99))} | ${ms(mean(samples))} | ${delta(50)} | ${delta(99)} |`;
}
