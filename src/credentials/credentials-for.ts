import type { Settings } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { isolateCache } from "../primitives/expiring-map.ts";
import type { ServerAuth } from "../registry/schemas.ts";
import type { UpstreamCredentials } from "../upstream/upstream-target.ts";
import type { Caller } from "./caller.ts";
import { type ConnectReason, connectionRequired, connectLinkUrl, newConnectLink } from "./connect-link.ts";
import { identityAssertion } from "./identity-assertion.ts";
import { SigningKeyMisconfigured } from "./signing-keys.ts";
import { exchangedToken, forgetExchangedToken, TokenExchangeFailed } from "./token-exchange.ts";
import { vaultKeyProblem, vaultSecretsFrom } from "./vault-crypto.ts";
import { vaultObject } from "./vault-do.ts";

/** A server as credentials need it: which incarnation, where, and its auth mode. */
export interface CredentialServer {
	name: string;
	url: string;
	generation: string;
	auth?: ServerAuth | undefined;
}

/** Who a request is for, as the credentials need it (see `Calling` of the session's binding). */
export interface CredentialCaller {
	caller: Caller;
	/** The gateway's origin: identity assertions' `iss`, connect links' host. */
	origin: string;
	/** A person's access token from OAUTH_ISSUER, for token exchange; null otherwise. */
	subjectToken: string | null;
}

/**
 * A person's access token per isolate, under their vault, the server and its
 * incarnation (never under the token): the stateless 2026-07-28 path and
 * every session in this isolate then read the vault once per token lifetime,
 * not per call. Kept until a minute before the token expires; the vault
 * refreshes it when asked again. A disconnect revokes the token at the
 * upstream, so a copy still held here is refused there and the next ask of the
 * vault finds it gone.
 */
const personTokens = isolateCache<{ token: string; keepMs: number }>({ maxEntries: 5_000 });
/** A token the vault gave without a lifetime is believed for this long. */
const UNDATED_TOKEN_MS = 5 * 60_000;
/** A token is not used in its last minute: a call may take that long. */
const EXPIRY_MARGIN_MS = 60_000;

/**
 * What a request to `server` carries for `calling`, by the server's auth mode,
 * behind the one seam every path uses (the session's connections, the
 * stateless 2026-07-28 path): nothing beyond the configured headers for
 * "operator" (null), a person's own token from their vault for "oauth", an
 * assertion the gateway signs for "identity", an exchanged token for
 * "token-exchange". A mode that needs a caller the request does not have
 * (no caller, or a key where a person's token is needed) is refused with a
 * sentence, never sent with the operator's headers instead.
 */
export function credentialsFor(
	server: CredentialServer,
	calling: () => CredentialCaller | null,
	env: Env,
	settings: Settings,
): UpstreamCredentials | null {
	const auth = server.auth ?? { type: "operator" };
	// What these credentials serve (one request at the edge, one session object's member): concurrent
	// requests for a token share its one fetch within it, and only a settled token beyond it.
	const flight = {};
	switch (auth.type) {
		case "operator":
			return null;
		case "identity":
			return {
				headers: async () => {
					const who = required(server, calling());
					const assertion = await identityAssertion(who.caller, server.url, who.origin, env, flight).catch(
						(error: unknown) => {
							throw asGatewayError(server, error);
						},
					);
					return auth.header ? { [auth.header]: assertion } : { authorization: `Bearer ${assertion}` };
				},
				// An assertion is fresh every minute; one the server refuses, it refuses for who it names.
				refused: async () => false,
			};
		case "token-exchange":
			return {
				headers: async () => {
					const who = required(server, calling());
					if (who.subjectToken === null) throw notExchangeable(server, who.caller);
					const exchange = { name: server.name, generation: server.generation, auth };
					const token = await exchangedToken(who.caller, who.subjectToken, exchange, env, settings, flight).catch(
						(error: unknown) => {
							throw asGatewayError(server, error);
						},
					);
					return { authorization: `Bearer ${token}` };
				},
				refused: async () => {
					const who = calling();
					if (who) forgetExchangedToken(who.caller, server);
					return who?.subjectToken != null;
				},
			};
		case "oauth":
			return personCredentials(server, calling, env, settings, flight);
	}
}

function personCredentials(
	server: CredentialServer,
	calling: () => CredentialCaller | null,
	env: Env,
	settings: Settings,
	flight: object,
): UpstreamCredentials {
	const cacheKey = (caller: Caller) => `${caller.vault}\n${server.name}\n${server.generation}`;
	const ask = async (who: CredentialCaller, refusedToken?: string): Promise<{ token: string; keepMs: number }> => {
		// Checked here, before any object is asked: an error thrown in the vault reaches the edge as plain text.
		const problem = vaultKeyProblem(vaultSecretsFrom(env));
		if (problem) {
			throw new GatewayError(
				"misconfigured",
				`Upstream server '${server.name}' acts with each person's own account, and the gateway is misconfigured: ${problem.message}`,
				{ server: server.name },
			);
		}
		const answer = await vaultObject(env, who.caller.vault).token({
			server: server.name,
			generation: server.generation,
			...(refusedToken !== undefined ? { refusedToken } : {}),
		});
		if (answer.kind === "connect") throw await connectFirst(server, who, answer.reason, settings);
		const keepMs = answer.expiresAt === null ? UNDATED_TOKEN_MS : answer.expiresAt - Date.now() - EXPIRY_MARGIN_MS;
		return { token: answer.accessToken, keepMs };
	};
	return {
		headers: async () => {
			const who = required(server, calling());
			const { token } = await personTokens.load(
				cacheKey(who.caller),
				() => ask(who),
				(found) => found.keepMs,
				flight,
			);
			return { authorization: `Bearer ${token}` };
		},
		refused: async (given) => {
			const who = required(server, calling());
			const refusedToken = (given.authorization ?? "").replace(/^Bearer /, "");
			// The vault refreshes once, or says the person must connect again (thrown as -32042).
			const fresh = await ask(who, refusedToken);
			personTokens.set(cacheKey(who.caller), fresh, fresh.keepMs);
			return true;
		},
	};
}

/** The -32042 answer naming a new connect link for this person and server. */
async function connectFirst(
	server: CredentialServer,
	who: CredentialCaller,
	reason: ConnectReason,
	settings: Settings,
): Promise<GatewayError> {
	if (!settings.sessionSecret) {
		return new GatewayError("misconfigured", "The gateway is misconfigured: SESSION_SECRET is not set.");
	}
	const link = newConnectLink(who.caller, server, Date.now());
	const url = await connectLinkUrl(who.origin, settings.sessionSecret, link);
	return connectionRequired(server.name, url, link.nonce, reason);
}

/** A credential that could not be made, as the gateway's error: the operator's log has the detail. */
function asGatewayError(server: CredentialServer, error: unknown): unknown {
	if (error instanceof TokenExchangeFailed) return error.toGatewayError();
	if (error instanceof SigningKeyMisconfigured) {
		console.error(`upstream ${server.name}: misconfigured: ${error.message}`);
		return new GatewayError(
			"misconfigured",
			`Upstream server '${server.name}' is misconfigured, so the gateway cannot reach it; the operator's logs say why.`,
			{ server: server.name },
		);
	}
	return error;
}

function required(server: CredentialServer, who: CredentialCaller | null): CredentialCaller {
	if (who) return who;
	// Requests the gateway makes of itself (a recheck's refresh) have no caller to speak for.
	throw new GatewayError(
		"upstream_auth_required",
		`Upstream server '${server.name}' takes each caller's own credentials, and this request has no caller.`,
		{ server: server.name },
	);
}

function notExchangeable(server: CredentialServer, caller: Caller): GatewayError {
	const who = caller.keyId !== null ? "an API key" : "a sign-in of the gateway's own";
	return new GatewayError(
		"upstream_auth_required",
		`Upstream server '${server.name}' accepts tokens exchanged from the organisation's authorization server, and this request came with ${who}, which cannot be exchanged. Sign in through the organisation's authorization server to use '${server.name}'.`,
		{ server: server.name },
	);
}
