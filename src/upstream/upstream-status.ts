import { z } from "zod";
import { GatewayError, MISSING_CLIENT_CAPABILITY_CODE } from "../mcp/gateway-error.ts";
import { parseJsonRpcMessage } from "../mcp/jsonrpc.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { mediaTypeOf } from "../primitives/media-type.ts";

/** How much of an upstream's `WWW-Authenticate` challenge an error keeps for the operator. */
const MAX_CHALLENGE_CHARS = 512;

/**
 * What an upstream's HTTP failure status means, for every path that meets
 * one (2025 sessions, the era probe, listening, the stateless 2026-07-28
 * path). A 401 is the credentials configured for the server refused
 * (`upstream_auth_required`, its challenge kept in `details`); anything else
 * is an `upstream_error` naming the status. The client never gets the
 * upstream's status as the gateway's own: a 401 from the gateway means the
 * client's credential was refused, and an OAuth client would sign in again.
 *
 * @example
 * throw upstreamStatusError("alpha", 401, TOOLS_CALL, response.headers.get("www-authenticate"));
 */
export function upstreamStatusError(
	server: string,
	status: number,
	what: string,
	challenge: string | null = null,
): GatewayError {
	if (status === 401) {
		return new GatewayError(
			"upstream_auth_required",
			`Upstream server '${server}' rejected the gateway's credentials (HTTP 401) for ${what}, so it was not performed. The gateway operator should check the credentials configured for '${server}' (its headers, and the secrets they reference).`,
			{ server, ...(challenge ? { details: { wwwAuthenticate: challenge.slice(0, MAX_CHALLENGE_CHARS) } } : {}) },
		);
	}
	const detail =
		status === 403
			? "its credentials were rejected (HTTP 403); check the headers configured for it"
			: `it answered HTTP ${status}`;
	return new GatewayError("upstream_error", `Upstream server '${server}' failed ${what}: ${detail}.`, { server });
}

/** An upstream reply that is not what MCP allows (`what` says what it sent). */
export function upstreamProtocolError(server: string, what: string): GatewayError {
	return new GatewayError("upstream_error", `Upstream server '${server}' sent ${what}.`, { server });
}

/** How much of a refusal's body is read to find what it says; a JSON-RPC error is far smaller. */
const MAX_REFUSAL_BYTES = 64 * 1024;

/** MCP's MissingRequiredClientCapability (2026-07-28): HTTP 400, the capabilities in `data`. */
const MissingCapabilitySchema = z.object({
	error: z.object({
		code: z.literal(MISSING_CLIENT_CAPABILITY_CODE),
		data: z.object({ requiredCapabilities: z.record(z.string(), z.unknown()) }),
	}),
});

/**
 * The failure an upstream's HTTP error answer means, reading its body when
 * it may say more than the status: a 2026-07-28 upstream that needs a
 * client capability the request did not declare answers 400 with -32021,
 * which becomes a sentence naming the capability (the client can do
 * something about it) instead of "it answered HTTP 400". Consumes the body.
 */
export async function upstreamFailureOf(
	server: string,
	response: Response,
	what: string,
	challenge: string | null = null,
): Promise<GatewayError> {
	const type = mediaTypeOf(response.headers.get("content-type"));
	if (response.status !== 400 || type !== "application/json" || !response.body) {
		await response.body?.cancel();
		return upstreamStatusError(server, response.status, what, challenge);
	}
	const bytes = await readCapped(response.body, MAX_REFUSAL_BYTES);
	const reply = bytes === null ? null : parseJsonRpcMessage(new TextDecoder().decode(bytes));
	const refusal = MissingCapabilitySchema.safeParse(reply);
	if (!refusal.success) return upstreamStatusError(server, response.status, what, challenge);
	return missingCapabilityError(server, what, refusal.data.error.data.requiredCapabilities);
}

/** `{ elicitation: { form: {} }, sampling: {} }` as "elicitation (form) and sampling". */
function capabilityNames(required: Record<string, unknown>): string {
	const names = Object.entries(required).map(([name, value]) => {
		const parts = typeof value === "object" && value !== null ? Object.keys(value) : [];
		return parts.length > 0 ? `${name} (${parts.join(", ")})` : name;
	});
	if (names.length <= 1) return names[0] ?? "a capability";
	return `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

function missingCapabilityError(server: string, what: string, required: Record<string, unknown>): GatewayError {
	const names = capabilityNames(required);
	return new GatewayError(
		"missing_client_capability",
		`Upstream server '${server}' needs a client that supports ${names} to perform ${what}, and this client did not declare it when it connected. Use a client that supports ${names}, or ask the operator for a tool that does not need it.`,
		{ server, data: { requiredCapabilities: required } },
	);
}
