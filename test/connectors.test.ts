import { describe, expect, it } from "vitest";
import { connectorUrl } from "../src/registry/connector-tokens.ts";
import { connectorToken, startConnector } from "./support/fake-connector.ts";
import { admin, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { upstreamUrl } from "./support/upstreams.ts";

/** A server reached through connectors, registered by its connector address. */
async function registerConnectorServer(): Promise<string> {
	const name = uniqueName("conn");
	const response = await admin("PUT", `/servers/${name}`, { url: connectorUrl(name) });
	if (response.status !== 201 && response.status !== 200) {
		throw new Error(`registering ${name} failed: ${response.status} ${await response.text()}`);
	}
	return name;
}

describe("connectors: the gateway's side", () => {
	it("a tools/call through a connector reaches the upstream and answers (2025 client through a session)", async () => {
		const server = await registerConnectorServer();
		const { token } = await connectorToken(server);
		const connector = await startConnector(server, token, { upstream: upstreamUrl("beta") });
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const result = await client.callTool({ name: "echo", arguments: { text: "through a connector" } });
		expect(result.content).toEqual([{ type: "text", text: "through a connector" }]);
		expect(connector.requests().some((frame) => frame.body?.includes("through a connector"))).toBe(true);
		await client.close();
	});
});
