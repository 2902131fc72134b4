import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it } from "vitest";
import { upstreamUrl } from "./support/upstreams.ts";

/**
 * The 2026-07-28 fixtures (scripts/fixtures/modern-upstream.ts) as an SDK v2 client
 * sees them, straight, without the gateway: what later tests rely on them
 * to report.
 */

const clients: Client[] = [];
afterEach(async () => {
	await Promise.all(clients.splice(0).map((client) => client.close()));
});

async function connect(which: "modern" | "dual", mode: "auto" | "legacy"): Promise<Client> {
	const client = new Client(
		{ name: "fixture-check", version: "1.2.3" },
		{ capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } },
	);
	client.setRequestHandler("elicitation/create", async () => ({ action: "accept", content: { name: "Ada" } }));
	await client.connect(new StreamableHTTPClientTransport(new URL(upstreamUrl(which))));
	clients.push(client);
	return client;
}

describe("the modern fixtures", () => {
	for (const which of ["modern", "dual"] as const) {
		it(`${which} serves a 2026-07-28 client: whoami reports its envelope, region_echo the mirrored Mcp-Param-Region header, ask_name asks then greets`, async () => {
			const client = await connect(which, "auto");
			expect(client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
			const whoami = await client.callTool({ name: "whoami", arguments: {} });
			expect(whoami.structuredContent).toEqual({
				server: which,
				era: "modern",
				protocolVersion: "2026-07-28",
				clientInfo: { name: "fixture-check", version: "1.2.3" },
				clientCapabilities: { elicitation: { form: {} } },
			});
			const region = await client.callTool({ name: "region_echo", arguments: { region: "eu-west" } });
			expect(region.structuredContent).toEqual({ region: "eu-west", header: "eu-west" });
			const greeting = await client.callTool({ name: "ask_name", arguments: {} });
			expect(greeting.content).toEqual([{ type: "text", text: "hello Ada" }]);
			const sum = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
			expect(sum.structuredContent).toEqual({ sum: 5 });
		});
	}

	it("dual also serves a 2025 client, statelessly; whoami then has no envelope to report", async () => {
		const client = await connect("dual", "legacy");
		expect(client.getNegotiatedProtocolVersion()).toBe("2025-11-25");
		const whoami = await client.callTool({ name: "whoami", arguments: {} });
		expect(whoami.structuredContent).toMatchObject({ server: "dual", era: "legacy", clientInfo: null });
		const echo = await client.callTool({ name: "echo", arguments: { text: "hi" } });
		expect(echo.content).toEqual([{ type: "text", text: "hi" }]);
		const readme = await client.readResource({ uri: "demo://dual/readme" });
		expect(readme.contents).toEqual([{ uri: "demo://dual/readme", mimeType: "text/plain", text: "This is dual." }]);
	});

	it("modern refuses a 2025 client with the versions it supports", async () => {
		const refused = await connect("modern", "legacy").then(
			() => null,
			(error: unknown) => error,
		);
		expect(String(refused)).toMatch(/-32022.*"supported":\["2026-07-28"\]/);
	});
});
