/**
 * The reference server's tools that answer in one round: each content type,
 * a tool error, logging and progress while a call runs, a preserved JSON
 * Schema 2020-12 input schema, an `x-mcp-header` argument (SEP-2243), and
 * the 2025-era stream that closes mid-call to be resumed (SEP-1699).
 */
import { type CallToolResult, fromJsonSchema, type McpServer } from "@modelcontextprotocol/server";
import * as z from "zod";
import { delay, JSON_SCHEMA_2020_12, PNG_BASE64, text, WAV_BASE64 } from "./fixture-content.ts";

/** Pause between the log messages and progress steps of one call, so a client must keep reading the stream. */
const STEP_MS = 50;
/** How long test_reconnection works after closing its stream: the client resumes within its retry interval. */
const RECONNECTION_WORK_MS = 100;

const NO_ARGUMENTS = z.object({});

/**
 * `x-mcp-header` is an extension keyword the SDK's JSON Schema type does not
 * list, so the schema is declared apart from the call (no excess-property
 * check) and passed through as written.
 */
const X_MCP_HEADER_SCHEMA = {
	type: "object",
	properties: {
		region: { type: "string", description: "mirrored into Mcp-Param-Region", "x-mcp-header": "Region" },
		level: { type: "integer", description: "not mirrored" },
	},
} as const;

export function registerContentTools(server: McpServer): void {
	server.registerTool("test_simple_text", { description: "Returns a simple text." }, () =>
		text("This is a simple text response for testing."),
	);
	server.registerTool("test_image_content", { description: "Returns an image." }, () => ({
		content: [{ type: "image", data: PNG_BASE64, mimeType: "image/png" }],
	}));
	server.registerTool("test_audio_content", { description: "Returns audio." }, () => ({
		content: [{ type: "audio", data: WAV_BASE64, mimeType: "audio/wav" }],
	}));
	server.registerTool("test_embedded_resource", { description: "Returns an embedded resource." }, () => ({
		content: [
			{
				type: "resource",
				resource: {
					uri: "test://embedded-resource",
					mimeType: "text/plain",
					text: "This is an embedded resource content.",
				},
			},
		],
	}));
	server.registerTool(
		"test_multiple_content_types",
		{ description: "Returns text, image and resource." },
		(): CallToolResult => ({
			content: [
				{ type: "text", text: "Multiple content types test:" },
				{ type: "image", data: PNG_BASE64, mimeType: "image/png" },
				{
					type: "resource",
					resource: {
						uri: "test://mixed-content-resource",
						mimeType: "application/json",
						text: JSON.stringify({ test: "data", value: 123 }),
					},
				},
			],
		}),
	);
	server.registerTool("test_error_handling", { description: "Always fails as a tool result." }, () => ({
		isError: true,
		content: [{ type: "text", text: "This tool intentionally returns an error for testing" }],
	}));

	server.registerTool(
		"test_tool_with_logging",
		{ description: "Logs three messages while it runs.", inputSchema: NO_ARGUMENTS },
		async (_args, ctx) => {
			// ctx.mcpReq.log honours the level the client set (2025 logging/setLevel, 2026 _meta logLevel);
			// the API is deprecated for 2026-07-28, and the 2025 scenarios are what exercise it.
			await ctx.mcpReq.log("info", "Tool execution started");
			await delay(STEP_MS);
			await ctx.mcpReq.log("info", "Tool processing data");
			await delay(STEP_MS);
			await ctx.mcpReq.log("info", "Tool execution completed");
			return text("Tool with logging executed successfully");
		},
	);
	server.registerTool(
		"test_logging_tool",
		{ description: "Logs once; only a request that set a log level may see it (SEP-2575).", inputSchema: NO_ARGUMENTS },
		async (_args, ctx) => {
			await ctx.mcpReq.log("info", "test_logging_tool ran");
			return text("logged through the request's own, level-gated channel");
		},
	);
	server.registerTool(
		"test_tool_with_progress",
		{ description: "Reports progress 0, 50, 100 of 100.", inputSchema: NO_ARGUMENTS },
		async (_args, ctx) => {
			const progressToken = ctx.mcpReq._meta?.progressToken;
			// Progress without a token from the client is not allowed: there would be nothing to relate it to.
			if (progressToken !== undefined) {
				for (const progress of [0, 50, 100]) {
					await ctx.mcpReq.notify({
						method: "notifications/progress",
						params: { progressToken, progress, total: 100, message: `Completed step ${progress} of 100` },
					});
					if (progress < 100) await delay(STEP_MS);
				}
			}
			return text("Tool with progress executed successfully");
		},
	);

	server.registerTool(
		"json_schema_2020_12_tool",
		{
			description: "Tool with JSON Schema 2020-12 features.",
			// Hand-written JSON, not zod, so every 2020-12 keyword is advertised exactly as written.
			inputSchema: fromJsonSchema<Record<string, unknown>>(JSON_SCHEMA_2020_12),
		},
		(args) => text(`Received: ${JSON.stringify(args)}`),
	);
	server.registerTool(
		"test_x_mcp_header",
		{
			description: "Mirrors its region argument into the Mcp-Param-Region header (SEP-2243).",
			inputSchema: fromJsonSchema<{ region?: string; level?: number }>(X_MCP_HEADER_SCHEMA),
		},
		(args) => text(`region=${args.region ?? "<none>"}`),
	);

	server.registerTool(
		"test_reconnection",
		{
			description: "Closes its SSE stream mid-call and answers after the client resumes (SEP-1699).",
			inputSchema: NO_ARGUMENTS,
		},
		async (_args, ctx) => {
			// The POST stream ends here, after its priming event; the result is kept in the event store and
			// reaches the client when it resumes with GET and Last-Event-ID. Only the 2025 sessionful
			// transport offers closeSSE; elsewhere the call simply answers on its stream.
			ctx.http?.closeSSE?.();
			await delay(RECONNECTION_WORK_MS);
			return text(
				"Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
			);
		},
	);
}
