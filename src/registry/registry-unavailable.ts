import { describeError, GatewayError } from "../mcp/gateway-error.ts";

/** The registry's read path (Workers KV) failed: a 503 that names nothing internal; the detail is logged. */
export function registryUnavailable(cause: unknown): GatewayError {
	console.error(`registry read failed: ${describeError(cause)}`);
	return new GatewayError(
		"registry_unavailable",
		"Service Unavailable: the gateway cannot read its configuration right now. Try again shortly.",
		{ cause, headers: { "retry-after": "5" } },
	);
}
