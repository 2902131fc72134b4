import { GatewayError } from "./gateway-error.ts";

/**
 * A tool name the endpoint does not offer, answered exactly as any unknown
 * name; its class only lets the gateway's accounting tell it from an
 * upstream's own invalid params (the `tool_call` outcome `unknown_tool`).
 */
export class UnknownToolRefusal extends GatewayError {}

/**
 * The refusals of a name or URI an endpoint does not offer, in one place: a
 * hidden tool, prompt or resource is refused with exactly these, so a caller
 * cannot tell it from one that does not exist.
 */
export function unknownName(what: "tool" | "prompt", name: string): GatewayError {
	const sentence = `Unknown ${what}: '${name}' is not offered by this endpoint.`;
	return what === "tool"
		? new UnknownToolRefusal("invalid_params", sentence)
		: new GatewayError("invalid_params", sentence);
}

export function unknownResource(uri: string): GatewayError {
	return new GatewayError("resource_not_found", `Resource not found: ${uri} is not offered by this endpoint.`);
}
