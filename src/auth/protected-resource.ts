import type { Settings } from "../config.ts";
import { GATEWAY_SCOPE, resourceOf } from "./authorization-server.ts";

/** Where the protected-resource metadata (RFC 9728) of every `/mcp...` endpoint is published. */
export const METADATA_PREFIX = "/.well-known/oauth-protected-resource";

/** The issuer clients sign in with: the gateway itself, or the external authorization server. */
export function authorizationServerOf(settings: Settings, origin: string): string | null {
	const oauth = settings.oauth;
	return oauth.mode === "gateway" ? origin : oauth.mode === "external" ? oauth.issuer : null;
}

/**
 * The scopes a client asks for first (RFC 9728 `scopes_supported`, and the
 * 401's `scope`): the gateway's own one scope, or what the operator says the
 * external authorization server needs. Scopes never decide what a token
 * reaches; access rules do.
 */
function scopesOf(settings: Settings): string[] {
	const oauth = settings.oauth;
	return oauth.mode === "gateway" ? [GATEWAY_SCOPE] : oauth.mode === "external" ? oauth.scopes : [];
}

/**
 * The metadata of the gateway's one resource, `<origin>/mcp`: every endpoint
 * below it (`/mcp/<name>`) is covered by it, so one token works on all of
 * them and the access rules, not the audience, say which servers it reaches.
 */
export function protectedResourceMetadata(settings: Settings, origin: string): Record<string, unknown> | null {
	const issuer = authorizationServerOf(settings, origin);
	if (issuer === null) return null;
	return {
		resource: resourceOf(origin),
		authorization_servers: [issuer],
		bearer_methods_supported: ["header"],
		resource_name: "mcp-edge-gateway",
		...(scopesOf(settings).length > 0 ? { scopes_supported: scopesOf(settings) } : {}),
	};
}

/**
 * The `WWW-Authenticate` challenge of a 401 (RFC 6750, RFC 9728 §5.1): with
 * OAuth on it names the metadata, so a client can find where to sign in; an
 * `error` says why a token that was sent was refused.
 */
export function bearerChallenge(
	settings: Settings,
	origin: string,
	error?: { code: "invalid_token"; description: string },
): string {
	const parts = ['realm="mcp-edge-gateway"'];
	if (error) {
		parts.push(`error="${error.code}"`, `error_description="${error.description.replace(/["\\]/g, "'")}"`);
	}
	if (authorizationServerOf(settings, origin) !== null) {
		parts.push(`resource_metadata="${origin}${METADATA_PREFIX}/mcp"`);
		const scopes = scopesOf(settings);
		if (!error && scopes.length > 0) parts.push(`scope="${scopes.join(" ")}"`);
	}
	return `Bearer ${parts.join(", ")}`;
}
