import type { Counter, Histogram } from "@opentelemetry/api";
import type { Telemetry } from "./telemetry.ts";

/**
 * The bucket advice the MCP semantic conventions give for every MCP duration histogram
 * (seconds): `[0.01 … 300]` (GenAI conventions, docs/gen-ai/mcp.md, "Metrics").
 */
export const MCP_DURATION_BUCKETS: readonly number[] = Object.freeze([
	0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300,
]);

/**
 * Why the gateway refused a request, the value of `mcp_gateway.refusal.kind`. A `confirm`
 * policy's refusals are kinds of their own, not `policy`: the policy let the call go and its
 * caller did not confirm it (`confirm_declined`: declined, cancelled, not confirmed or not
 * answered in time), or could not be asked (`confirm_unavailable`: no form elicitation);
 * decision 0126.
 */
export const REFUSAL_KINDS = [
	"auth",
	"rate_limit",
	"policy",
	"pinning",
	"guard",
	"confirm_declined",
	"confirm_unavailable",
	"approval_denied",
	"approval_timed_out",
	"approval_unavailable",
	"limit",
	"origin",
	"unknown_endpoint",
] as const;
export type RefusalKind = (typeof REFUSAL_KINDS)[number];

/** Attribute names of the gateway's own counters (no convention exists for them). */
export const GATEWAY_ATTRIBUTES = {
	refusalKind: "mcp_gateway.refusal.kind",
	/** Why telemetry was dropped: `queue_full` or `export_failed`. */
	dropReason: "mcp_gateway.telemetry.drop_reason",
	/** A server's name in the registry (a connector server's: operators bound how many there are). */
	serverName: "mcp_gateway.server.name",
	/** What happened to a connector's connection: one of CONNECTOR_EVENTS. */
	connectorEvent: "mcp_gateway.connector.event",
	/** A content guard's name. */
	guardName: "mcp_gateway.guard.name",
	/** What a guard did: `redact`, `block` or `log`. */
	guardAction: "mcp_gateway.guard.action",
} as const;

/**
 * A connector's connection, the value of `mcp_gateway.connector.event`: it said hello
 * (`connected`), it closed the socket itself (`closed`), the connection broke or broke the
 * protocol (`dropped`), or its token was revoked (`revoked`).
 */
export const CONNECTOR_EVENTS = ["connected", "closed", "dropped", "revoked"] as const;
export type ConnectorEvent = (typeof CONNECTOR_EVENTS)[number];

/**
 * The gateway's instruments: the conventions' histograms with their names, units,
 * descriptions and bucket advice, and the counters in the `mcp_gateway.` namespace where
 * no convention exists. Made once per Telemetry (`instrumentsOf`); record through them,
 * never through a second `createHistogram` of the same name.
 */
export interface Instruments {
	/** `mcp.server.operation.duration` (s): a client's request or notification, as the gateway served it. */
	readonly serverOperationDuration: Histogram;
	/** `mcp.client.operation.duration` (s): a request the gateway sent to an upstream. */
	readonly clientOperationDuration: Histogram;
	/** `mcp.server.session.duration` (s): a 2025 session, from initialize to its end. */
	readonly serverSessionDuration: Histogram;
	/** `mcp_gateway.refusals`: requests refused, by `mcp_gateway.refusal.kind`. */
	readonly refusals: Counter;
	/** `mcp_gateway.rate_limited`: requests refused by a rate limit (also counted in refusals). */
	readonly rateLimited: Counter;
	/** `mcp_gateway.tools.held`: tools held by pinning (a changed definition under `block`). */
	readonly toolsHeld: Counter;
	/** `mcp_gateway.telemetry.dropped`: spans not exported (queue full, or the export failed). */
	readonly telemetryDropped: Counter;
	/** `mcp_gateway.connector.connections`: connectors connecting and going, by server and event. */
	readonly connectorConnections: Counter;
	/** `mcp_gateway.guard.verdicts`: content guards that found something, by guard and action. */
	readonly guardVerdicts: Counter;
}

const made = new WeakMap<Telemetry, Instruments>();

/** The instruments of `telemetry`, made on first use (no-ops when telemetry is off). */
export function instrumentsOf(telemetry: Telemetry): Instruments {
	const existing = made.get(telemetry);
	if (existing) return existing;
	const instruments = makeInstruments(telemetry);
	made.set(telemetry, instruments);
	return instruments;
}

function makeInstruments({ meter }: Telemetry): Instruments {
	const duration = (name: string, description: string) =>
		meter.createHistogram(name, {
			description,
			unit: "s",
			advice: { explicitBucketBoundaries: [...MCP_DURATION_BUCKETS] },
		});
	return {
		serverOperationDuration: duration(
			"mcp.server.operation.duration",
			"MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent.",
		),
		clientOperationDuration: duration(
			"mcp.client.operation.duration",
			"The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.",
		),
		serverSessionDuration: duration(
			"mcp.server.session.duration",
			"The duration of the MCP session as observed on the MCP server.",
		),
		refusals: meter.createCounter("mcp_gateway.refusals", {
			description: "Requests the gateway refused, by mcp_gateway.refusal.kind.",
			unit: "{request}",
		}),
		rateLimited: meter.createCounter("mcp_gateway.rate_limited", {
			description: "Requests refused by a rate limit.",
			unit: "{request}",
		}),
		toolsHeld: meter.createCounter("mcp_gateway.tools.held", {
			description: "Tools held by pinning because their definition changed.",
			unit: "{tool}",
		}),
		telemetryDropped: meter.createCounter("mcp_gateway.telemetry.dropped", {
			description: "Spans not exported: the isolate's queue was full or the export failed.",
			unit: "{span}",
		}),
		connectorConnections: meter.createCounter("mcp_gateway.connector.connections", {
			description:
				"Connectors that connected (said hello) or went (closed, dropped, revoked), by mcp_gateway.server.name and mcp_gateway.connector.event.",
			unit: "{connection}",
		}),
		guardVerdicts: meter.createCounter("mcp_gateway.guard.verdicts", {
			description:
				"Content guards that found something in a call's arguments or result, by mcp_gateway.guard.name and mcp_gateway.guard.action.",
			unit: "{verdict}",
		}),
	};
}
