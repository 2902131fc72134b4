import type { Counter, Histogram } from "@opentelemetry/api";
import type { Telemetry } from "./telemetry.ts";

/**
 * The instruments the gateway records with its spans: the conventions'
 * duration histograms (seconds, with their bucket advice) and the gateway's
 * own counters, where no convention exists, in its `mcp_gateway.` namespace.
 * Made once per telemetry (a no-op meter makes no-op instruments).
 */
export interface WireInstruments {
	serverDuration: Histogram;
	clientDuration: Histogram;
	sessionDuration: Histogram;
	refusals: Counter;
	rateLimited: Counter;
	pinningHeld: Counter;
}

/** The conventions' bucket advice for MCP operation and session durations, in seconds. */
const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

const made = new WeakMap<Telemetry, WireInstruments>();

export function wireInstruments(telemetry: Telemetry): WireInstruments {
	let instruments = made.get(telemetry);
	if (instruments) return instruments;
	const { meter } = telemetry;
	const seconds = (name: string, description: string) =>
		meter.createHistogram(name, { unit: "s", description, advice: { explicitBucketBoundaries: DURATION_BUCKETS } });
	instruments = {
		serverDuration: seconds(
			"mcp.server.operation.duration",
			"MCP request or notification duration as observed on the receiver.",
		),
		clientDuration: seconds(
			"mcp.client.operation.duration",
			"MCP request or notification duration as observed on the sender.",
		),
		sessionDuration: seconds(
			"mcp.server.session.duration",
			"The duration of the MCP session as observed on the MCP server.",
		),
		refusals: meter.createCounter("mcp_gateway.refusals", {
			unit: "{request}",
			description: "Requests the gateway refused before serving them, by kind.",
		}),
		rateLimited: meter.createCounter("mcp_gateway.rate_limited", {
			unit: "{request}",
			description: "Requests refused by a rate or concurrency limit.",
		}),
		pinningHeld: meter.createCounter("mcp_gateway.pinning.held", {
			unit: "{tool}",
			description: "Tool definitions held back by pinning (new or changed since approved).",
		}),
	};
	made.set(telemetry, instruments);
	return instruments;
}
