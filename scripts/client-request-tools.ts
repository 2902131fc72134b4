/**
 * Test fixture tools that make the server a full peer of its client: during a
 * call they ask the client (sampling, elicitation, roots), and one sends log
 * messages outside any request, so they travel on the server's GET stream.
 * Each answer names the server, so a test over several members can tell
 * whose request reached the client and whose answer came back.
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { type RequestId, SubscribeRequestSchema, UnsubscribeRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { Gates } from "./upstream-server.ts";

export function registerClientRequestTools(server: McpServer, name: string, gates: Gates): void {
	server.server.registerCapabilities({ logging: {}, resources: { subscribe: true } });
	const subscribed = new Set<string>();
	server.server.setRequestHandler(SubscribeRequestSchema, ({ params }) => {
		subscribed.add(params.uri);
		return {};
	});
	server.server.setRequestHandler(UnsubscribeRequestSchema, ({ params }) => {
		subscribed.delete(params.uri);
		return {};
	});
	server.registerTool(
		"touch_resource",
		{
			description: "Tells subscribers that a resource changed (outside any request: on the GET stream).",
			inputSchema: { uri: z.string() },
		},
		async ({ uri }) => {
			if (subscribed.has(uri)) await server.server.sendResourceUpdated({ uri });
			return text(`${name} ${subscribed.has(uri) ? "told subscribers of" : "has no subscriber for"} ${uri}`);
		},
	);
	server.registerTool(
		"ask_model_progress",
		{ description: "Asks the client's model with a progress token; says how much progress the client reported." },
		async (extra) => {
			let seen = 0;
			await server.server.createMessage(
				{ messages: [{ role: "user", content: { type: "text", text: `slow question from ${name}` } }], maxTokens: 16 },
				{
					relatedRequestId: extra.requestId,
					onprogress: () => {
						seen++;
					},
				},
			);
			return text(`${name} saw ${seen} progress`);
		},
	);
	const text = (value: string) => ({ content: [{ type: "text" as const, text: value }] });
	server.registerTool(
		"client_capabilities",
		{ description: "The capabilities the client declared to this server." },
		() => text(JSON.stringify(server.server.getClientCapabilities() ?? {})),
	);
	// Requests made during a call are related to it: they travel on that call's stream.
	const askModel = async (related: RequestId | undefined) => {
		const reply = await server.server.createMessage(
			{ messages: [{ role: "user", content: { type: "text", text: `question from ${name}` } }], maxTokens: 16 },
			related === undefined ? {} : { relatedRequestId: related },
		);
		return text(`${name} heard: ${reply.content.type === "text" ? reply.content.text : reply.content.type}`);
	};
	server.registerTool("ask_model", { description: "Asks the client's model a question (sampling)." }, (extra) =>
		askModel(extra.requestId),
	);
	server.registerTool(
		"ask_model_unrelated",
		{ description: "Asks the client's model outside the call (the request travels on the GET stream)." },
		() => askModel(undefined),
	);
	server.registerTool("ask_user", { description: "Asks the client's user (elicitation)." }, async (extra) => {
		const reply = await server.server.elicitInput(
			{
				message: `${name} needs an answer`,
				requestedSchema: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
			},
			{ relatedRequestId: extra.requestId },
		);
		return text(`${name} got ${reply.action}: ${String(reply.content?.answer ?? "")}`);
	});
	server.registerTool("list_roots", { description: "Lists the client's roots." }, async (extra) => {
		const { roots } = await server.server.listRoots(undefined, { relatedRequestId: extra.requestId });
		return text(`${name} sees ${roots.map((root) => root.uri).join(", ")}`);
	});
	server.registerTool(
		"ask_url",
		{ description: "Asks the client to open a URL (URL-mode elicitation), then says it is complete." },
		async (extra) => {
			const elicitationId = `${name}-consent`;
			const reply = await server.server.elicitInput(
				{ mode: "url", message: `${name} needs consent`, url: `https://consent.example/${name}`, elicitationId },
				{ relatedRequestId: extra.requestId },
			);
			await server.server.createElicitationCompletionNotifier(elicitationId, {
				relatedRequestId: extra.requestId,
			})();
			return text(`${name} url ${reply.action}`);
		},
	);
	server.registerTool(
		"ask_model_many",
		{
			description: "Asks the client's model `count` questions at once; says how many were answered and refused.",
			inputSchema: { count: z.number().int().min(1).max(200) },
		},
		async ({ count }, extra) => {
			const outcomes = await Promise.allSettled(
				Array.from({ length: count }, (_, i) =>
					server.server.createMessage(
						{
							messages: [{ role: "user", content: { type: "text", text: `question ${i} from ${name}` } }],
							maxTokens: 16,
						},
						{ relatedRequestId: extra.requestId },
					),
				),
			);
			const refused = outcomes.filter((outcome) => outcome.status === "rejected");
			const reason = refused[0]?.status === "rejected" ? String(refused[0].reason) : "";
			return text(`${count - refused.length} answered, ${refused.length} refused${reason ? `: ${reason}` : ""}`);
		},
	);
	server.registerTool(
		"ask_then_cancel",
		{
			description: "Asks the client's model, then cancels the question once the named gate is released.",
			inputSchema: { gate: z.string().min(1).max(200) },
		},
		async ({ gate }, extra) => {
			const asking = new AbortController();
			const question = server.server
				.createMessage(
					{ messages: [{ role: "user", content: { type: "text", text: "never mind" } }], maxTokens: 16 },
					{ signal: asking.signal, relatedRequestId: extra.requestId },
				)
				.then(
					() => "answered",
					() => "cancelled",
				);
			await gates.pass(gate, extra.signal);
			asking.abort("the server no longer needs the answer");
			return text(`${name} question ${await question}`);
		},
	);
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
