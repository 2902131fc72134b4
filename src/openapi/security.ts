import { base64 } from "../primitives/crypto.ts";
import type { CompiledApi, CompiledOperation, CompiledScheme } from "../registry/openapi-records.ts";

/*
 * Where a call's credentials go: what the document's security requirements and
 * schemes say (OpenAPI 3.1 §4.8.27-30), nothing else. The requirement used is
 * the first one the gateway holds every credential of; when it holds none
 * complete, nothing is placed and the API's own 401 becomes the tool's error,
 * in the API's words.
 */

/** The credentials a call may carry. */
export interface CallCredentials {
	/** Scheme name → credential value (operator's resolved openapi.credentials). */
	bySchema: Record<string, string>;
	/** The person's token when the server's auth mode is oauth / token-exchange / identity (from the MCP request's Authorization: Bearer), else null. */
	bearer: string | null;
}

/** A request being built: where credentials can be put. */
export interface CredentialPlaces {
	headers: Headers;
	query: URLSearchParams;
	/** `name=value` pairs of the Cookie header. */
	cookies: string[];
}

/** RFC 6265's cookie-octet: a value of only these goes as it is; anything else is percent-encoded. */
const COOKIE_OCTETS = /^[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*$/;

const encoder = new TextEncoder();

/**
 * The credential for one scheme: the operator's value for it by name, else the person's
 * token for the schemes that carry a token (an OAuth 2 or OpenID Connect access token, a
 * bearer token, and an API key, which many APIs accept a token as). Basic takes
 * `user:password` from the operator only: a token is not a password.
 */
function credentialFor(name: string, scheme: CompiledScheme, credentials: CallCredentials): string | null {
	if (Object.hasOwn(credentials.bySchema, name)) return credentials.bySchema[name] ?? null;
	if (scheme.type === "http" && scheme.scheme === "basic") return null;
	return credentials.bearer;
}

/**
 * The schemes and values of the requirement to satisfy: the first whose every scheme has a
 * credential. An empty requirement (`{}`, "no credentials needed") is taken only when no other
 * can be met, so an API whose authentication is optional still gets the credentials it offers to take.
 */
function chosenRequirement(
	api: CompiledApi,
	operation: CompiledOperation,
	credentials: CallCredentials,
): [CompiledScheme, string][] | null {
	const requirements = operation.security ?? api.security;
	for (const requirement of requirements) {
		const names = Object.keys(requirement);
		if (names.length === 0) continue;
		const placed: [CompiledScheme, string][] = [];
		for (const name of names) {
			const scheme = api.securitySchemes[name];
			const value = scheme === undefined ? null : credentialFor(name, scheme, credentials);
			if (scheme === undefined || value === null) break;
			placed.push([scheme, value]);
		}
		if (placed.length === names.length) return placed;
	}
	return null;
}

function cookieValue(text: string): string {
	return COOKIE_OCTETS.test(text) ? text : encodeURIComponent(text);
}

function place(scheme: CompiledScheme, value: string, into: CredentialPlaces): void {
	switch (scheme.type) {
		case "apiKey":
			if (scheme.in === "header") into.headers.set(scheme.name, value);
			else if (scheme.in === "query") into.query.set(scheme.name, value);
			else into.cookies.push(`${cookieValue(scheme.name)}=${cookieValue(value)}`);
			return;
		case "http":
			into.headers.set(
				"authorization",
				scheme.scheme === "basic" ? `Basic ${base64(encoder.encode(value))}` : `Bearer ${value}`,
			);
			return;
		case "oauth2":
		case "openIdConnect":
			into.headers.set("authorization", `Bearer ${value}`);
			return;
	}
}

/**
 * Puts a call's credentials where the operation's security (its own, else the API's) says.
 * An operation with `security: []` gets none, whatever the gateway holds.
 *
 * @example
 * // scheme `key`: { type: "apiKey", in: "query", name: "api_key" }
 * placeCredentials(api, operation, { bySchema: { key: "k1" }, bearer: null }, into);
 * // into.query: api_key=k1
 */
export function placeCredentials(
	api: CompiledApi,
	operation: CompiledOperation,
	credentials: CallCredentials,
	into: CredentialPlaces,
): void {
	for (const [scheme, value] of chosenRequirement(api, operation, credentials) ?? []) place(scheme, value, into);
}
