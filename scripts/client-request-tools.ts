/**
 * Test fixture tools that make the server a full peer of its client: during a
 * call they ask the client (sampling, elicitation, roots), and one sends log
 * messages outside any request, so they travel on the server's GET stream.
 * Each answer names the server, so a test over several members can tell
 * whose request reached the client and whose answer came back.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";

export function registerClientRequestTools(server: McpServer, name: string): void {
	server.server.registerCapabilities({ logging: {} });
	const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });
	server.registerTool(
		"client_capabilities",
		{ description: "The capabilities the client declared to this server." },
		() => text(JSON.stringify(server.server.getClientCapabilities() ?? {})),
	);
	server.registerTool("ask_model", { description: "Asks the client's model a question (sampling)." }, async () => {
		const reply = await server.server.createMessage({
			messages: [{ role: "user", content: { type: "text", text: `question from ${name}` } }],
			maxTokens: 16,
		});
		return text(`${name} heard: ${reply.content.type === "text" ? reply.content.text : reply.content.type}`);
	});
	server.registerTool("ask_user", { description: "Asks the client's user (elicitation)." }, async () => {
		const reply = await server.server.elicitInput({
			message: `${name} needs an answer`,
			requestedSchema: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
		});
		return text(`${name} got ${reply.action}: ${String(reply.content?.answer ?? "")}`);
	});
	server.registerTool("list_roots", { description: "Lists the client's roots." }, async () => {
		const { roots } = await server.server.listRoots();
		return text(`${name} sees ${roots.map((root) => root.uri).join(", ")}`);
	});
	server.registerTool(
		"announce",
		{
			description: "Sends log messages outside any request (they go on the GET stream), then answers.",
			inputSchema: { count: z.number().int().min(1).max(100), tag: z.string().max(100) },
		},
		async ({ count, tag }) => {
			for (let i = 1; i <= count; i++) {
				await server.server.sendLoggingMessage({ level: "info", logger: "announcer", data: `${tag} ${i}` });
			}
			return text(`${name} announced ${count}`);
		},
	);
}
