/**
 * The multi-round-trip fixtures of the 2026-07-28 `input-required-result-*`
 * scenarios (SEP-2322): tools and a prompt that answer `input_required` until
 * the retried request carries what they asked for. State that must survive
 * between rounds travels in `requestState`, sealed by the codec; the server's
 * `requestState.verify` hook rejects a tampered one before any handler runs.
 */
import { randomUUID } from "node:crypto";
import { acceptedContent, type InputRequests, inputRequired, type McpServer } from "@modelcontextprotocol/server";
import * as z from "zod";
import { stringForm, text } from "./fixture-content.ts";
import {
	declaredCapabilities,
	elicitation,
	type FlowStateCodec,
	flowState,
	rootUris,
	sampledText,
} from "./input-requests.ts";

const NO_ARGUMENTS = z.object({});

/** The elicitation most scenarios expect: the caller's name, filed under `user_name`. */
function askName(): InputRequests {
	return { user_name: inputRequired.elicit({ message: "What is your name?", requestedSchema: stringForm("name") }) };
}

function askConfirmation(): InputRequests {
	return {
		confirm: inputRequired.elicit({
			message: "Please confirm",
			requestedSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
		}),
	};
}

export function registerInputRequiredTools(server: McpServer, codec: FlowStateCodec): void {
	const mint = (flow: string, round: number, name?: string) => codec.mint({ flow, round, name, nonce: randomUUID() });

	// Also what the result-type, missing-input-response, ignore-extra-params and validate-input scenarios
	// call: anything short of an accepted `user_name` answer is asked for again, never an error.
	server.registerTool(
		"test_input_required_result_elicitation",
		{ description: "Asks for the caller's name (elicitation).", inputSchema: NO_ARGUMENTS },
		(_args, ctx) => {
			const name = acceptedContent<{ name: unknown }>(ctx.mcpReq.inputResponses, "user_name")?.name;
			if (typeof name !== "string") return inputRequired({ inputRequests: askName() });
			return text(`Hello, ${name}!`);
		},
	);

	server.registerTool(
		"test_input_required_result_sampling",
		{ description: "Asks the client's LLM a question (sampling).", inputSchema: NO_ARGUMENTS },
		(_args, ctx) => {
			const answer = sampledText(ctx, "capital_question");
			if (answer !== undefined) return text(`Sampling response: ${answer}`);
			return inputRequired({
				inputRequests: {
					capital_question: inputRequired.createMessage({
						messages: [{ role: "user", content: { type: "text", text: "What is the capital of France?" } }],
						maxTokens: 100,
					}),
				},
			});
		},
	);

	server.registerTool(
		"test_input_required_result_list_roots",
		{ description: "Asks for the client's roots (roots/list).", inputSchema: NO_ARGUMENTS },
		(_args, ctx) => {
			const uris = rootUris(ctx, "client_roots");
			if (uris === undefined) return inputRequired({ inputRequests: { client_roots: inputRequired.listRoots() } });
			return text(`Client exposed ${uris.length} root(s): ${uris.join(", ")}`);
		},
	);

	server.registerTool(
		"test_input_required_result_request_state",
		{ description: "Round-trips sealed requestState alongside a confirmation.", inputSchema: NO_ARGUMENTS },
		async (_args, ctx) => {
			const state = flowState(ctx, "request_state");
			if (state === undefined || elicitation(ctx, "confirm") === undefined) {
				return inputRequired({ inputRequests: askConfirmation(), requestState: await mint("request_state", 1) });
			}
			return text("state-ok: requestState verified and confirmation received");
		},
	);

	server.registerTool(
		"test_input_required_result_multiple_inputs",
		{ description: "Asks for an elicitation, a sampling and the roots in one round.", inputSchema: NO_ARGUMENTS },
		async (_args, ctx) => {
			const name = acceptedContent<{ name: unknown }>(ctx.mcpReq.inputResponses, "user_name")?.name;
			const greeting = sampledText(ctx, "greeting");
			const roots = rootUris(ctx, "client_roots");
			if (typeof name === "string" && greeting !== undefined && roots !== undefined) {
				return text(`${greeting} ${name}: ${roots.length} root(s) visible`);
			}
			return inputRequired({
				inputRequests: {
					...askName(),
					greeting: inputRequired.createMessage({
						messages: [{ role: "user", content: { type: "text", text: "Generate a greeting" } }],
						maxTokens: 50,
					}),
					client_roots: inputRequired.listRoots(),
				},
				requestState: await mint("multiple_inputs", 1),
			});
		},
	);

	// The round lives in the sealed state, not on the server: 2026-07-28 serves each round on a fresh instance.
	server.registerTool(
		"test_input_required_result_multi_round",
		{ description: "Two elicitation rounds with evolving requestState.", inputSchema: NO_ARGUMENTS },
		async (_args, ctx) => {
			const state = flowState(ctx, "multi_round");
			if (state === undefined) {
				return inputRequired({
					inputRequests: {
						step1: inputRequired.elicit({ message: "Step 1: What is your name?", requestedSchema: stringForm("name") }),
					},
					requestState: await mint("multi_round", 1),
				});
			}
			if (state.round === 1) {
				const name = acceptedContent<{ name: unknown }>(ctx.mcpReq.inputResponses, "step1")?.name;
				return inputRequired({
					inputRequests: {
						step2: inputRequired.elicit({
							message: "Step 2: What is your favorite color?",
							requestedSchema: stringForm("color"),
						}),
					},
					requestState: await mint("multi_round", 2, typeof name === "string" ? name : "unknown"),
				});
			}
			const color = acceptedContent<{ color: unknown }>(ctx.mcpReq.inputResponses, "step2")?.color;
			return text(
				`Multi-round complete: ${state.name ?? "unknown"} likes ${typeof color === "string" ? color : "unknown"}`,
			);
		},
	);

	// A retry whose state fails the HMAC never gets here: the verify hook answers -32602 first.
	server.registerTool(
		"test_input_required_result_tampered_state",
		{ description: "Rejects retries whose requestState fails verification.", inputSchema: NO_ARGUMENTS },
		async (_args, ctx) => {
			if (flowState(ctx, "tampered_state") !== undefined && elicitation(ctx, "confirm") !== undefined) {
				return text("integrity-ok: requestState verified");
			}
			return inputRequired({ inputRequests: askConfirmation(), requestState: await mint("tampered_state", 1) });
		},
	);

	// Asks only for what the request's declared client capabilities cover.
	server.registerTool(
		"test_input_required_result_capabilities",
		{ description: "Requests only the input kinds the client declared.", inputSchema: NO_ARGUMENTS },
		(_args, ctx) => {
			if (ctx.mcpReq.inputResponses !== undefined) return text("Capability-aware input requests fulfilled");
			const declared = declaredCapabilities(ctx);
			const inputRequests: InputRequests = {};
			if (declared.elicitation) Object.assign(inputRequests, askName());
			if (declared.sampling) {
				inputRequests.greeting = inputRequired.createMessage({
					messages: [{ role: "user", content: { type: "text", text: "Generate a short greeting" } }],
					maxTokens: 50,
				});
			}
			if (declared.roots) inputRequests.client_roots = inputRequired.listRoots();
			if (Object.keys(inputRequests).length === 0) {
				return text("No declared client capability supports an input request");
			}
			return inputRequired({ inputRequests });
		},
	);

	// input_required is not only for tools: prompts/get may ask too (input-required-result-non-tool-request).
	server.registerPrompt(
		"test_input_required_result_prompt",
		{ description: "Asks for context before it renders." },
		(ctx) => {
			const context = acceptedContent<{ context: unknown }>(ctx.mcpReq.inputResponses, "user_context")?.context;
			if (typeof context !== "string") {
				return inputRequired({
					inputRequests: {
						user_context: inputRequired.elicit({
							message: "What context should the prompt use?",
							requestedSchema: stringForm("context"),
						}),
					},
				});
			}
			return { messages: [{ role: "user", content: { type: "text", text: `Use the following context: ${context}` } }] };
		},
	);
}
