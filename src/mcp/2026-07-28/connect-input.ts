import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { ELICITATION_CREATE } from "../methods.ts";

/** A -32042 error as the gateway makes it: its message, and the URL-mode elicitation in `data.elicitations`. */
const UrlElicitationErrorSchema = z.object({
	code: z.literal(ErrorCode.UrlElicitationRequired),
	message: z.string(),
	data: z.object({ elicitations: z.array(z.record(z.string(), z.unknown())).min(1) }).loose(),
});

/**
 * A connection the person must make, as 2026-07-28 asks a client for input:
 * an `input_required` result whose one request is the URL-mode elicitation
 * of the -32042 error (the connect link). The client opens it, then sends the
 * request again; nothing is pending in the gateway meanwhile, so the retry
 * needs no `requestState`, and its `inputResponses` only say the person went.
 * Null for any other error.
 */
export function connectInputRequired(error: unknown): Record<string, unknown> | null {
	const parsed = UrlElicitationErrorSchema.safeParse(error);
	if (!parsed.success) return null;
	const [elicitation] = parsed.data.data.elicitations;
	return {
		resultType: "input_required",
		inputRequests: {
			connect: { method: ELICITATION_CREATE, params: { ...elicitation, message: parsed.data.message } },
		},
	};
}
