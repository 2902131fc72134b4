import * as oauth from "oauth4webapi";
import { z } from "zod";
import { isLoopbackHost } from "../config.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import { ExpiringMap } from "../primitives/expiring-map.ts";
import { isUpstreamReference, resolveReferences } from "../upstream/upstream-target.ts";
import type { Caller } from "./caller.ts";

/** RFC 8693 section 2.1 and 3: the grant, and the token type asked for and given. */
export const TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
export const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
/** An exchanged token is used until this long before it expires, so it never expires on its way upstream. */
export const EXCHANGE_REFRESH_MARGIN_MS = 30_000;
/** A token endpoint's reply is a few hundred bytes; anything past this is not read. */
export const MAX_EXCHANGE_REPLY_BYTES = 64 * 1024;
/** Exchanged tokens one isolate keeps at most (one per principal and server). */
const MAX_CACHED_EXCHANGES = 5_000;

/** A server's `auth` when its tokens come from an RFC 8693 exchange of the person's own access token. */
export interface TokenExchangeAuth {
	type: "token-exchange";
	tokenEndpoint: string;
	/** The `audience` asked for: the name the token endpoint knows the upstream by. */
	audience: string;
	scopes?: string[] | undefined;
	/** The gateway's client at the token endpoint; absent: the exchange is made without client authentication. */
	clientId?: string | undefined;
	/** Only a `${UPSTREAM_…}` reference, resolved from the Worker's secrets at use. */
	clientSecret?: string | undefined;
}

/** The parts of a server record an exchange needs. */
export interface TokenExchangeServer {
	name: string;
	generation: string;
	auth: TokenExchangeAuth;
}

/** The settings an exchange is made under. */
export interface TokenExchangeSettings {
	/** Plain http only to a loopback token endpoint, and only when this is set (ALLOW_HTTP_UPSTREAMS). */
	allowHttpUpstreams: boolean;
	/** How long the token endpoint has to answer. */
	upstreamTimeoutMs: number;
}

/** Why an exchange failed, for callers to switch on. */
export const TOKEN_EXCHANGE_FAILURES = {
	/** The token endpoint refused the person's token (`invalid_grant` and the like): they must sign in again. */
	refused: "upstream_auth_required",
	/** The operator's configuration cannot work: the endpoint's scheme, the client secret, the client refused. */
	misconfigured: "misconfigured",
	/** The token endpoint could not be reached or did not answer in time. */
	unreachable: "upstream_unavailable",
	/** It answered, but not with a bearer access token within bounds. */
	invalid_reply: "upstream_error",
} as const;
export type TokenExchangeFailure = keyof typeof TOKEN_EXCHANGE_FAILURES;

/** A token exchange that did not yield a token; the message is a sentence that names no secret. */
export class TokenExchangeFailed extends Error {
	readonly code: TokenExchangeFailure;
	readonly server: string;

	constructor(code: TokenExchangeFailure, server: string, message: string, options: { cause?: unknown } = {}) {
		super(message, options);
		this.name = "TokenExchangeFailed";
		this.code = code;
		this.server = server;
	}

	/** The failure as the client is told it (a misconfiguration's detail stays in the operator's log). */
	toGatewayError(): GatewayError {
		const message =
			this.code === "misconfigured"
				? `Upstream server '${this.server}' is misconfigured, so the gateway cannot reach it; the operator's logs say why.`
				: this.message;
		return new GatewayError(TOKEN_EXCHANGE_FAILURES[this.code], message, { server: this.server, cause: this });
	}
}

/** What the token endpoint answered, as far as the gateway uses it. */
const ExchangeReplySchema = z.object({
	access_token: z.string().min(1),
	token_type: z.literal("bearer", "must be Bearer: the gateway sends exchanged tokens as bearer tokens"),
	issued_token_type: z.literal(ACCESS_TOKEN_TYPE).optional(),
	expires_in: z.number().positive().optional(),
});

interface ExchangedToken {
	accessToken: string;
	/** SHA-256 of the subject token it was exchanged for: another token of the same principal exchanges again. */
	subjectDigest: string;
	/** ms; null: the token endpoint did not say, and the token is not kept. */
	expiresAt: number | null;
}

export interface TokenExchangerOptions {
	/** The clock, in milliseconds (tests pass their own). */
	now?: () => number;
	maxEntries?: number;
}

/**
 * Exchanges a person's access token (from OAUTH_ISSUER) for one an upstream
 * accepts (RFC 8693), over oauth4webapi. Tokens are kept per isolate under
 * (principal, server, generation) — never under the token — until 30 s
 * before they expire, and concurrent calls share one exchange.
 */
export class TokenExchanger {
	private readonly cache: ExpiringMap<ExchangedToken>;
	private readonly now: () => number;

	constructor(options: TokenExchangerOptions = {}) {
		this.now = options.now ?? Date.now;
		this.cache = new ExpiringMap({ maxEntries: options.maxEntries ?? MAX_CACHED_EXCHANGES, now: this.now });
	}

	/**
	 * The access token for `caller` at `server`; rejects with `TokenExchangeFailed`.
	 * Concurrent calls of one `flight` (the request or session object asking) share one exchange.
	 */
	async token(
		caller: Caller,
		subjectToken: string,
		server: TokenExchangeServer,
		vars: Record<string, unknown>,
		settings: TokenExchangeSettings,
		flight: object,
	): Promise<string> {
		const subjectDigest = await sha256Hex(subjectToken);
		const key = JSON.stringify([caller.principalId, server.name, server.generation]);
		const exchange = () => this.exchange(subjectToken, subjectDigest, server, vars, settings);
		const shared = await this.cache.load(key, exchange, (token) => this.keepFor(token), flight);
		if (shared.subjectDigest === subjectDigest) return shared.accessToken;
		// What is kept (or under way) was exchanged for another token of this principal (before a refresh or a new
		// sign-in): this token is not trusted to that one's result. It is exchanged itself, and replaces it.
		const own = await exchange();
		this.cache.set(key, own, this.keepFor(own));
		return own.accessToken;
	}

	/** Forgets what `caller` was given for `server`: the upstream refused it, so the next request exchanges again. */
	forget(caller: Caller, server: Pick<TokenExchangeServer, "name" | "generation">): void {
		this.cache.delete(JSON.stringify([caller.principalId, server.name, server.generation]));
	}

	private keepFor(token: ExchangedToken): number {
		return token.expiresAt === null ? 0 : token.expiresAt - EXCHANGE_REFRESH_MARGIN_MS - this.now();
	}

	private async exchange(
		subjectToken: string,
		subjectDigest: string,
		server: TokenExchangeServer,
		vars: Record<string, unknown>,
		settings: TokenExchangeSettings,
	): Promise<ExchangedToken> {
		const { auth } = server;
		const endpoint = checkedEndpoint(server, settings);
		const as: oauth.AuthorizationServer = { issuer: endpoint.origin, token_endpoint: endpoint.href };
		// Without a configured client the exchange carries no client authentication at all (RFC 8693 allows it);
		// the library needs a client id all the same, which is then never sent.
		const client: oauth.Client = { client_id: auth.clientId ?? "mcp-edge-gateway" };
		const clientAuth = clientAuthentication(server, vars);
		const parameters = new URLSearchParams({
			subject_token: subjectToken,
			subject_token_type: ACCESS_TOKEN_TYPE,
			requested_token_type: ACCESS_TOKEN_TYPE,
			audience: auth.audience,
		});
		if (auth.scopes && auth.scopes.length > 0) parameters.set("scope", auth.scopes.join(" "));
		const began = this.now();
		let reply: z.output<typeof ExchangeReplySchema>;
		try {
			const response = await oauth.genericTokenEndpointRequest(
				as,
				client,
				clientAuth,
				TOKEN_EXCHANGE_GRANT,
				parameters,
				{
					signal: AbortSignal.timeout(settings.upstreamTimeoutMs),
					[oauth.allowInsecureRequests]: endpoint.protocol === "http:",
					[oauth.customFetch]: (url, init) => boundedFetch(server.name, url, init),
				},
			);
			const parsed = ExchangeReplySchema.safeParse(
				await oauth.processGenericTokenEndpointResponse(as, client, response),
			);
			if (!parsed.success) {
				const issue = parsed.error.issues[0];
				throw new TokenExchangeFailed(
					"invalid_reply",
					server.name,
					`The token endpoint of server '${server.name}' answered an exchange with no usable access token (${issue?.path.join(".")}: ${issue?.message}).`,
				);
			}
			reply = parsed.data;
		} catch (error) {
			throw exchangeFailure(server.name, error);
		}
		return {
			accessToken: reply.access_token,
			subjectDigest,
			// Counted from before the request, so the token is never believed to live longer than it does.
			expiresAt: reply.expires_in === undefined ? null : began + reply.expires_in * 1000,
		};
	}
}

/** The token endpoint's URL, if the gateway may send a person's token there: https, or http on loopback when allowed. */
function checkedEndpoint(server: TokenExchangeServer, settings: TokenExchangeSettings): URL {
	const url = URL.parse(server.auth.tokenEndpoint);
	const problem =
		url === null
			? "its tokenEndpoint is not a URL"
			: url.username !== "" || url.password !== ""
				? "its tokenEndpoint carries credentials"
				: url.protocol === "https:"
					? null
					: url.protocol !== "http:"
						? "its tokenEndpoint is neither https nor http"
						: !settings.allowHttpUpstreams
							? "its tokenEndpoint is plain http and ALLOW_HTTP_UPSTREAMS is not true"
							: !isLoopbackHost(url.hostname)
								? "its tokenEndpoint is plain http on a host other than loopback"
								: null;
	if (url === null || problem !== null) throw misconfigured(server.name, problem ?? "its tokenEndpoint is not a URL");
	return url;
}

/** The client's authentication: its secret (a resolved `${UPSTREAM_…}` reference) in Basic, a public client, or none. */
function clientAuthentication(server: TokenExchangeServer, vars: Record<string, unknown>): oauth.ClientAuth {
	const { clientId, clientSecret } = server.auth;
	if (clientSecret === undefined) return clientId === undefined ? noClientAuthentication : oauth.None();
	if (clientId === undefined) throw misconfigured(server.name, "its clientSecret is set without a clientId");
	if (!isUpstreamReference(clientSecret)) {
		throw misconfigured(server.name, "its clientSecret is not a ${UPSTREAM_…} reference to a Worker secret");
	}
	const resolved = resolveReferences(clientSecret, vars);
	if ("problem" in resolved) throw misconfigured(server.name, `its clientSecret ${resolved.problem}`);
	return oauth.ClientSecretBasic(resolved.value);
}

/** Sends nothing that names a client. */
const noClientAuthentication: oauth.ClientAuth = () => undefined;

/**
 * The token endpoint's answer, never followed elsewhere (a redirect would
 * take the person's token with it) and read only up to the cap, handed to
 * oauth4webapi whole.
 */
async function boundedFetch(server: string, url: string, init: oauth.CustomFetchOptions<"POST", URLSearchParams>) {
	const response = await fetch(url, { ...init, redirect: "manual" });
	if (response.status >= 300 && response.status < 400) {
		await response.body?.cancel();
		throw new TokenExchangeFailed(
			"invalid_reply",
			server,
			`The token endpoint of server '${server}' answered an exchange with a redirect (HTTP ${response.status}), which the gateway does not follow.`,
		);
	}
	const body = response.body ? await readCapped(response.body, MAX_EXCHANGE_REPLY_BYTES) : new Uint8Array();
	if (body === null) {
		throw new TokenExchangeFailed(
			"invalid_reply",
			server,
			`The token endpoint of server '${server}' answered an exchange with more than ${MAX_EXCHANGE_REPLY_BYTES / 1024} KiB.`,
		);
	}
	return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** What went wrong, as a `TokenExchangeFailed`; the token endpoint's own words are kept for the sentence. */
function exchangeFailure(server: string, error: unknown): TokenExchangeFailed {
	if (error instanceof TokenExchangeFailed) return error;
	if (error instanceof oauth.ResponseBodyError) {
		const said = error.error_description ? `: ${error.error_description}` : "";
		if (error.error === "invalid_client" || error.error === "unauthorized_client") {
			return misconfigured(server, `its token endpoint refused the gateway's client (${error.error}${said})`);
		}
		return new TokenExchangeFailed(
			"refused",
			server,
			`The token endpoint of server '${server}' refused to exchange your access token (${error.error}${said}); sign in again, or ask the operator whether you may use this server.`,
			{ cause: error },
		);
	}
	if (error instanceof oauth.WWWAuthenticateChallengeError) {
		return misconfigured(server, `its token endpoint refused the gateway's client (HTTP ${error.status})`);
	}
	if (error instanceof oauth.OperationProcessingError || error instanceof oauth.UnsupportedOperationError) {
		return new TokenExchangeFailed(
			"invalid_reply",
			server,
			`The token endpoint of server '${server}' answered an exchange with something other than a bearer access token (${describeError(error)}).`,
			{ cause: error },
		);
	}
	console.warn(`token exchange for ${server}: the token endpoint could not be reached: ${describeError(error)}`);
	return new TokenExchangeFailed(
		"unreachable",
		server,
		`The token endpoint of server '${server}' could not be reached or did not answer in time.`,
		{ cause: error },
	);
}

function misconfigured(server: string, problem: string): TokenExchangeFailed {
	console.error(`upstream ${server}: misconfigured: ${problem}`);
	return new TokenExchangeFailed("misconfigured", server, `Upstream server '${server}' is misconfigured: ${problem}.`);
}

const shared = new TokenExchanger();

/**
 * The access token `server` accepts for `caller`, exchanged (RFC 8693) for
 * `subjectToken`, the person's access token from OAUTH_ISSUER; cached in
 * this isolate until 30 s before it expires; concurrent calls of one `flight`
 * share one exchange. Rejects with `TokenExchangeFailed`.
 */
export function exchangedToken(
	caller: Caller,
	subjectToken: string,
	server: TokenExchangeServer,
	vars: Record<string, unknown>,
	settings: TokenExchangeSettings,
	flight: object,
): Promise<string> {
	return shared.token(caller, subjectToken, server, vars, settings, flight);
}

/** Forgets the token `caller` was given for `server` in this isolate (the upstream refused it). */
export function forgetExchangedToken(caller: Caller, server: Pick<TokenExchangeServer, "name" | "generation">): void {
	shared.forget(caller, server);
}
