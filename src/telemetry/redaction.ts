import type { ErrorKind } from "../mcp/gateway-error.ts";

/**
 * What telemetry says where the text it describes may not leave the gateway. A failure's own
 * words are for the client it answers, never for a collector or a log: a -32042's message holds
 * a usable connect link (whoever opens it binds their own upstream account to the caller's key),
 * a tool's error result holds what the tool echoed (paths, argument values), an upstream's
 * JSON-RPC error message and many of the gateway's own sentences (`describeError` of an upstream
 * failure) hold an upstream's words. So a span's status message is the failure's kind and the one
 * fixed sentence of that kind below, and a resource URI loses what may be a credential.
 */

/** Failures the gateway did not name itself: how an answer or a reply came out. */
const ANSWER_FAILURES = {
	tool_error: "The tool answered with an error result (isError).",
	rpc_error: "The answer was a JSON-RPC error; its code is rpc.response.status_code.",
	http_error: "The upstream answered an HTTP error status and no JSON-RPC answer; the status is error.type.",
} as const;

/** One sentence per gateway failure kind: a kind added to ERROR_KINDS does not compile until it has one. */
const GATEWAY_FAILURES = {
	bad_request: "The request was malformed.",
	parse_error: "The body was not JSON.",
	invalid_request: "The message was not a valid JSON-RPC request.",
	unsupported_protocol_version: "The protocol version is not one the gateway speaks.",
	header_mismatch: "The routing headers disagreed with the body.",
	session_required: "The request needed a session and named none.",
	unauthenticated: "The caller was not authenticated.",
	forbidden_origin: "The request's Origin is not allowed.",
	forbidden_host: "The request's Host is not allowed.",
	forbidden: "A policy or an access rule refused the request.",
	not_found: "What the request named does not exist.",
	session_not_found: "The session does not exist or has ended.",
	method_not_allowed: "The HTTP method is not allowed here.",
	not_acceptable: "The client does not accept the reply's media type.",
	conflict: "The request conflicts with what exists.",
	payload_too_large: "The body is larger than the gateway takes.",
	unsupported_media_type: "The body's media type is not one the gateway takes.",
	rate_limited: "A rate limit refused the request.",
	session_limit: "The caller has as many live sessions as it may.",
	too_many_in_flight: "The session has as many requests in flight as it may.",
	method_not_found: "The method is not known.",
	invalid_params: "The request's parameters were refused.",
	resource_not_found: "The resource does not exist.",
	misconfigured: "The gateway's configuration for the server is not usable.",
	registry_unavailable: "The registry could not be read.",
	identity_provider_unavailable: "The identity provider could not be reached.",
	issuer_unavailable: "The token issuer's keys could not be read.",
	internal: "The gateway failed unexpectedly.",
	upstream_unavailable: "The upstream could not be reached.",
	upstream_error: "The upstream answered, but not as MCP allows.",
	upstream_timeout: "The upstream did not answer in time.",
	upstream_auth_required: "The upstream refused the credentials.",
	missing_client_capability: "The upstream needs a client capability the client did not declare.",
	connection_required: "The person must connect their account at the upstream first.",
	outcome_uncertain: "The request may have reached the upstream; it was not repeated.",
	reply_too_large: "The upstream's reply was larger than the gateway relays.",
	cancelled: "The client cancelled the request.",
} as const satisfies Record<ErrorKind, string>;

const SENTENCES: Readonly<Record<FailureKind, string>> = { ...GATEWAY_FAILURES, ...ANSWER_FAILURES };

/** A failure as telemetry names it: the gateway's kind, or how the answer came out. */
export type FailureKind = ErrorKind | keyof typeof ANSWER_FAILURES;

/** Every failure kind, for a reader that wants them all (the tests' check of what was exported). */
export const FAILURE_KINDS = Object.keys(SENTENCES) as FailureKind[];

/** A failed span's status message: `<kind>: <the kind's sentence>`, e.g. `upstream_timeout: The upstream did not answer in time.` */
export function failureStatusMessage(kind: FailureKind): string {
	return `${kind}: ${SENTENCES[kind]}`;
}

/** OpenTelemetry's placeholder for a value left out (the URL conventions' `REDACTED`). */
const REDACTED = "REDACTED";
/** The user info of a hierarchical URI: `scheme://user:password@`. */
const USER_INFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#@]*@/;

/**
 * A resource URI as a span carries it (`mcp.resource.uri`): without user info and fragment, and
 * every query value `REDACTED` (a bare query word too), as the conventions ask of `url.full`:
 * a signed link carries its signature there. Scheme, host and path, which name the resource, stay.
 *
 * @example
 * redactedUri("https://drive.example/doc?sig=abc#page") // "https://drive.example/doc?sig=REDACTED"
 */
export function redactedUri(uri: string): string {
	const fragment = uri.indexOf("#");
	const whole = fragment === -1 ? uri : uri.slice(0, fragment);
	const question = whole.indexOf("?");
	const base = (question === -1 ? whole : whole.slice(0, question)).replace(USER_INFO, "$1");
	if (question === -1) return base;
	const query = whole
		.slice(question + 1)
		.split("&")
		.map((part) => {
			const equals = part.indexOf("=");
			if (part === "") return part;
			return equals === -1 ? REDACTED : `${part.slice(0, equals)}=${REDACTED}`;
		})
		.join("&");
	return `${base}?${query}`;
}
