import { describe, expect, it } from "vitest";
import { connectClient, createKey } from "./support/gateway.ts";
import { registerServer } from "./support/upstreams.ts";

describe("smoke", () => {
	it("an SDK client lists and calls tools through /mcp/:server", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		const { client } = await connectClient(`/mcp/${server}`, key);
		const tools = await client.listTools();
		expect(tools.tools.map((tool) => tool.name)).toContain("echo");
		const result = await client.callTool({ name: "echo", arguments: { text: "hi" } });
		expect(result.content).toEqual([{ type: "text", text: "hi" }]);
		await client.close();
	});
});
