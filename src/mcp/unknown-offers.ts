import { GatewayError } from "./gateway-error.ts";

/**
 * The refusals of a name or URI an endpoint does not offer, in one place: a
 * hidden tool, prompt or resource is refused with exactly these, so a caller
 * cannot tell it from one that does not exist.
 */
export function unknownName(what: "tool" | "prompt", name: string): GatewayError {
	return new GatewayError("invalid_params", `Unknown ${what}: '${name}' is not offered by this endpoint.`);
}

export function unknownResource(uri: string): GatewayError {
	return new GatewayError("resource_not_found", `Resource not found: ${uri} is not offered by this endpoint.`);
}
