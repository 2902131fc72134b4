import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { connectorObject } from "../src/connectors/connector-do.ts";
import { eventually } from "./support/eventually.ts";
import { connectorToken, startConnector } from "./support/fake-connector.ts";
import { admin, uniqueName } from "./support/gateway.ts";
import { GATEWAY_OTLP_TENANT, otlpMetrics } from "./support/otlp.ts";
import { flushProject } from "./support/traced-gateway.ts";
import { upstreamUrl } from "./support/upstreams.ts";

/*
 * A connector server's object exports with this project's env (the receiver's
 * gateway tenant): a connector connecting and going is counted there, by the
 * server's name and the event.
 */

/** The events of `mcp_gateway.connector.connections` exported for `server`, their deltas added up. */
async function connectionEvents(server: string): Promise<Record<string, number>> {
	const events: Record<string, number> = {};
	for (const metric of await otlpMetrics(GATEWAY_OTLP_TENANT)) {
		if (metric.name !== "mcp_gateway.connector.connections") continue;
		for (const point of metric.points) {
			if (point.attributes["mcp_gateway.server.name"] !== server) continue;
			const event = String(point.attributes["mcp_gateway.connector.event"]);
			events[event] = (events[event] ?? 0) + Number(point.value);
		}
	}
	return events;
}

describe("connectors in telemetry", () => {
	it("a connector's connect, its close and a revoked token's drop are exported in mcp_gateway.connector.connections by server and event", async () => {
		const server = uniqueName("conn");
		expect((await admin("PUT", `/servers/${server}?check=false`, { connector: {} })).status).toBe(201);
		const { id: tokenId, token } = await connectorToken(server);
		const leaving = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		await startConnector(server, token, { upstream: upstreamUrl("beta") });
		leaving.close();
		await leaving.closed;
		await eventually(async () => (await connectorObject(env, server).online()).length === 1, "one connector left");
		expect(await connectorObject(env, server).dropToken(tokenId)).toBe(1);
		const events = await eventually(async () => {
			const seen = await connectionEvents(server);
			const all = seen.connected === 2 && seen.closed === 1 && seen.revoked === 1;
			if (!all) await flushProject();
			return all ? seen : undefined;
		}, "connected, closed and revoked exported");
		expect(events).toEqual({ connected: 2, closed: 1, revoked: 1 });
	});
});
