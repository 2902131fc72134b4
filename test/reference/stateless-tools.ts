/**
 * The fixtures the 2026-07-28 `server-stateless` scenario (SEP-2575) names:
 * a tool that needs a client capability the request may not declare, a plain
 * call whose stream must carry no server→client request, and triggers that
 * publish list changes to open `subscriptions/listen` streams.
 */
import { inputRequired, type McpServer, type ProtocolEra, type ServerEventBus } from "@modelcontextprotocol/server";
import * as z from "zod";
import { text } from "./fixture-content.ts";
import { sampledText } from "./input-requests.ts";

const NO_ARGUMENTS = z.object({});

export function registerStatelessTools(server: McpServer, bus: ServerEventBus, era: ProtocolEra): void {
	// Asks for sampling; called with no declared capabilities, the SDK refuses it with -32021 before it runs.
	server.registerTool(
		"test_missing_capability",
		{ description: "Needs the sampling client capability.", inputSchema: NO_ARGUMENTS },
		(_args, ctx) => {
			if (sampledText(ctx, "llm_answer") !== undefined) return text("sampling round-trip complete");
			return inputRequired({
				inputRequests: {
					llm_answer: inputRequired.createMessage({
						messages: [{ role: "user", content: { type: "text", text: "Reply with the single word: pong" } }],
						maxTokens: 16,
					}),
				},
			});
		},
	);
	server.registerTool(
		"test_streaming_elicitation",
		{ description: "Answers with result frames only, no server→client request.", inputSchema: NO_ARGUMENTS },
		() => text("stream observed: result frames only, no top-level requests"),
	);

	// A 2026 listener is a subscriptions/listen stream fed by the bus; a 2025 session hears the notification itself.
	server.registerTool(
		"test_trigger_tool_change",
		{ description: "Announces that the tool list changed.", inputSchema: NO_ARGUMENTS },
		() => {
			bus.publish({ kind: "tools_list_changed" });
			if (era === "legacy") server.sendToolListChanged();
			return text("tools_list_changed published");
		},
	);
	server.registerTool(
		"test_trigger_prompt_change",
		{ description: "Announces that the prompt list changed.", inputSchema: NO_ARGUMENTS },
		() => {
			bus.publish({ kind: "prompts_list_changed" });
			if (era === "legacy") server.sendPromptListChanged();
			return text("prompts_list_changed published");
		},
	);
}
