import type { WaitUntil } from "../primitives/wait-until.ts";
import { type ConnectorEvent, GATEWAY_ATTRIBUTES, instrumentsOf } from "../telemetry/instruments.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";

/**
 * Counts a connector connecting or going in `mcp_gateway.connector.connections`
 * and exports it after the event (the object's `waitUntil`). With telemetry
 * off nothing is made or recorded: a connector server costs no telemetry
 * work where nobody configured it.
 */
export function countConnection(
	env: Readonly<Record<string, unknown>>,
	server: string,
	event: ConnectorEvent,
	waitUntil: WaitUntil,
): void {
	const telemetry = telemetryFor(env);
	if (!telemetry.enabled) return;
	instrumentsOf(telemetry).connectorConnections.add(1, {
		[GATEWAY_ATTRIBUTES.serverName]: server,
		[GATEWAY_ATTRIBUTES.connectorEvent]: event,
	});
	telemetry.flush(waitUntil);
}
