/**
 * The tools of the 2025-11-25 scenarios that ask the client for something
 * (tools-call-sampling, tools-call-elicitation, elicitation-sep1034-defaults,
 * elicitation-sep1330-enums). They are written once, in the 2026-07-28 style
 * (return `inputRequired(...)`, read the answer on re-entry); on a 2025 session
 * the SDK's legacy shim turns each input request into the server→client
 * request those scenarios expect, so the client sees 2025 behaviour.
 */
import { inputRequired, type McpServer, type ServerContext } from "@modelcontextprotocol/server";
import * as z from "zod";
import { DEFAULTS_FORM, ENUMS_FORM, type FormSchema, text } from "./fixture-content.ts";
import { elicitation, sampledText } from "./input-requests.ts";

/** The key each tool files its one input request under. */
const ANSWER = "answer";

export function registerSamplingElicitationTools(server: McpServer): void {
	server.registerTool(
		"test_sampling",
		{ description: "Asks the client's LLM (sampling/createMessage).", inputSchema: z.object({ prompt: z.string() }) },
		(args, ctx) => {
			const answer = sampledText(ctx, ANSWER);
			if (answer !== undefined) return text(`LLM response: ${answer}`);
			return inputRequired({
				inputRequests: {
					[ANSWER]: inputRequired.createMessage({
						messages: [{ role: "user", content: { type: "text", text: args.prompt } }],
						maxTokens: 100,
					}),
				},
			});
		},
	);

	server.registerTool(
		"test_elicitation",
		{ description: "Asks the user for input (elicitation/create).", inputSchema: z.object({ message: z.string() }) },
		(args, ctx) =>
			elicited(ctx, "User response", args.message, {
				type: "object",
				properties: {
					username: { type: "string", description: "User's response" },
					email: { type: "string", description: "User's email address" },
				},
				required: ["username", "email"],
			}),
	);
	server.registerTool(
		"test_elicitation_sep1034_defaults",
		{ description: "Elicits a form whose fields all have defaults (SEP-1034).", inputSchema: z.object({}) },
		(_args, ctx) =>
			elicited(ctx, "Elicitation completed", "Please review and update the form fields with defaults", DEFAULTS_FORM),
	);
	server.registerTool(
		"test_elicitation_sep1330_enums",
		{ description: "Elicits a form with every kind of enum field (SEP-1330).", inputSchema: z.object({}) },
		(_args, ctx) => elicited(ctx, "Elicitation completed", "Please select options from the enum fields", ENUMS_FORM),
	);
}

/** Reports the user's answer under `label`, or asks for one with `schema` when there is none yet. */
function elicited(ctx: ServerContext, label: string, message: string, schema: FormSchema) {
	const answer = elicitation(ctx, ANSWER);
	if (answer !== undefined) return text(`${label}: action=${answer.action}, content=${JSON.stringify(answer.content)}`);
	return inputRequired({
		inputRequests: { [ANSWER]: inputRequired.elicit({ message, requestedSchema: schema }) },
	});
}
