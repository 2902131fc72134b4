/**
 * A local OpenID Connect provider (oidc-provider) for `npm start` and the
 * tests: the upstream identity provider the gateway federates sign-in to, and,
 * with `resource`, also an external OAuth authorization server that issues JWT
 * access tokens for an MCP resource (the gateway's `OAUTH_ISSUER` mode).
 *
 * Sign-in is one form post: `GET /interaction/:uid` shows a login form, and a
 * right password signs the user in and grants the client what it asked for
 * (there is no consent page). Users come from a fixed demo directory, all with
 * the password `demo`. Everything lives in memory and ends with `close()`.
 *
 * @example
 * const idp = await startIdp({
 *   clients: [{ client_id: "app", client_secret: "s3cret", redirect_uris: ["http://localhost/cb"] }],
 *   resource: { uri: "http://localhost/mcp" },
 * });
 * // idp.issuer === `http://127.0.0.1:${idp.port}`
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type Account, type Configuration, errors, type Interaction, Provider } from "oidc-provider";

export interface IdpClient {
	client_id: string;
	client_secret?: string;
	redirect_uris: string[];
	/** `client_secret_basic` (the default), `client_secret_post`, or `none` for a public client. */
	token_endpoint_auth_method?: string;
}

export interface IdpOptions {
	/** 0 or absent: any free port. */
	port?: number;
	/** Statically registered clients. */
	clients: IdpClient[];
	/** Also act as an authorization server for this MCP resource: JWT access tokens with `aud` = `audience ?? uri`. */
	resource?: { uri: string; audience?: string };
}

export interface RunningIdp {
	port: number;
	/** `http://127.0.0.1:<port>`, no path. */
	issuer: string;
	close(): Promise<void>;
}

export interface DemoUser {
	email: string;
	email_verified: boolean;
	groups: string[];
	name: string;
}

/** The demo directory: the login is the subject. */
export const DEMO_USERS: ReadonlyMap<string, DemoUser> = new Map([
	["alice", { email: "alice@example.com", email_verified: true, groups: ["engineering"], name: "Alice" }],
	["bob", { email: "bob@contractor.example", email_verified: true, groups: [], name: "Bob" }],
	["carol", { email: "carol@example.com", email_verified: false, groups: ["engineering", "admins"], name: "Carol" }],
]);
/** Every demo user's password. */
export const DEMO_PASSWORD = "demo";
/** The scope a resource's access tokens carry. */
export const RESOURCE_SCOPE = "mcp";

const HOST = "127.0.0.1";
/** A login form post is a few short fields; anything larger is not one. */
const MAX_FORM_BYTES = 16 * 1024;
/** Which claims each OpenID scope releases. */
const CLAIMS: Record<string, string[]> = {
	openid: ["sub"],
	email: ["email", "email_verified"],
	profile: ["name", "preferred_username"],
	groups: ["groups"],
};
/** The OpenID scopes a grant may hold; anything else requested belongs to a resource. */
const OIDC_SCOPES = new Set([...Object.keys(CLAIMS), "offline_access"]);

/** Starts the identity provider; resolves once it listens. */
export async function startIdp(options: IdpOptions): Promise<RunningIdp> {
	// The issuer names the port, so the server listens before the provider exists.
	let handle: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => {
		res.writeHead(503).end();
	};
	const server = createServer((req, res) => handle(req, res));
	await new Promise<void>((resolve, reject) => {
		server.once("error", reject);
		server.listen(options.port ?? 0, HOST, () => resolve());
	});
	const port = (server.address() as AddressInfo).port;
	const issuer = `http://${HOST}:${port}`;
	const provider = new Provider(issuer, configuration(options));
	provider.on("server_error", (_ctx, error) => console.error(`oidc-idp: ${error.stack ?? error.message}`));
	const oidc = provider.callback();
	handle = (req, res) => {
		const path = new URL(req.url ?? "/", issuer).pathname;
		if (!path.startsWith("/interaction/")) return oidc(req, res);
		interaction(provider, req, res, path).catch((error: unknown) => {
			console.error(`oidc-idp: interaction ${path} failed:`, error);
			if (!res.headersSent) page(res, 400, layout("Sign-in failed", `<p>${escapeHtml(String(error))}</p>`));
		});
	};
	return {
		port,
		issuer,
		close: () =>
			new Promise<void>((resolve, reject) => {
				server.closeAllConnections();
				server.close((error) => (error ? reject(error) : resolve()));
			}),
	};
}

function configuration(options: IdpOptions): Configuration {
	const { resource } = options;
	// Ephemeral signing key and cookie key: sessions and tokens die with the process, which suits a dev IdP.
	const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
	const signingKey = { ...privateKey.export({ format: "jwk" }), kid: "idp-rs256", alg: "RS256", use: "sig" };
	return {
		clients: options.clients.map((client) => ({ ...client, grant_types: ["authorization_code", "refresh_token"] })),
		jwks: { keys: [signingKey] },
		// Cookies are marked Secure only when the request came over https (ctx.secure), so http loopback works as is.
		cookies: { keys: [randomBytes(32).toString("base64url")] },
		claims: CLAIMS,
		// The resource's scope is one clients may also name when they register (MCP clients do).
		scopes: ["openid", "offline_access", ...(resource ? [RESOURCE_SCOPE] : [])],
		// Scope-requested claims go into the ID token too: the gateway reads identity from the ID token alone.
		conformIdTokenClaims: false,
		pkce: { required: () => true },
		findAccount: async (_ctx, sub) => (DEMO_USERS.has(sub) ? account(sub) : undefined),
		// A resource's JWT access token carries who the user is, whatever scope was asked for.
		extraTokenClaims: async (_ctx, token) => {
			const user = token.accountId === undefined ? undefined : DEMO_USERS.get(token.accountId);
			if (!user) return undefined;
			return { email: user.email, email_verified: user.email_verified, groups: user.groups };
		},
		// As the default, without its notice: public clients may call from their redirect URIs' origins.
		clientBasedCORS: (ctx, origin, client) =>
			origin !== "null" &&
			(ctx.oidc.route === "userinfo" || client.clientAuthMethod === "none") &&
			client.redirectUris.some((uri) => URL.parse(uri)?.origin === origin),
		renderError: (ctx, out) => {
			ctx.type = "html";
			ctx.body = layout(
				"Sign-in error",
				Object.entries(out)
					.map(([key, value]) => `<p><b>${escapeHtml(key)}</b>: ${escapeHtml(value)}</p>`)
					.join(""),
			);
		},
		// Explicit, so the provider does not print a notice about each default.
		ttl: {
			AccessToken: 3600,
			AuthorizationCode: 60,
			IdToken: 3600,
			RefreshToken: 86_400,
			Interaction: 600,
			Session: 86_400,
			Grant: 86_400,
		},
		features: {
			devInteractions: { enabled: false },
			// MCP clients register themselves (RFC 7591); public clients (`none`) are allowed, PKCE is always required.
			registration: { enabled: resource !== undefined },
			resourceIndicators: {
				enabled: resource !== undefined,
				getResourceServerInfo: async (_ctx, indicator) => {
					if (!resource || indicator !== resource.uri) throw new errors.InvalidTarget();
					return {
						scope: RESOURCE_SCOPE,
						audience: resource.audience ?? resource.uri,
						accessTokenFormat: "jwt",
						jwt: { sign: { alg: "RS256" } },
					};
				},
				// A client that named the resource when authorizing gets its token even if it omits it at the token endpoint.
				useGrantedResource: async () => true,
			},
		},
	};
}

function account(sub: string): Account {
	return {
		accountId: sub,
		claims: () => {
			const user = DEMO_USERS.get(sub);
			return user ? { sub, preferred_username: sub, ...user } : { sub };
		},
	};
}

/** `GET /interaction/:uid` (the form) and `POST /interaction/:uid/login` (its submission). */
async function interaction(provider: Provider, req: IncomingMessage, res: ServerResponse, path: string) {
	const details = await provider.interactionDetails(req, res);
	const accountId = details.session?.accountId;
	if (req.method === "GET" && path === `/interaction/${details.uid}`) {
		// Signed in already, only this client's grant is missing: grant it without asking.
		if (details.prompt.name === "consent" && accountId) return finish(provider, req, res, details, accountId);
		return page(res, 200, loginForm(details.uid));
	}
	if (req.method === "POST" && path === `/interaction/${details.uid}/login`) {
		const form = new URLSearchParams(await readBody(req));
		const login = form.get("login") ?? "";
		if (!DEMO_USERS.has(login) || form.get("password") !== DEMO_PASSWORD) {
			return page(res, 200, loginForm(details.uid, "Unknown user or wrong password."));
		}
		return finish(provider, req, res, details, login);
	}
	page(res, 404, layout("Not found", ""));
}

/** Signs `accountId` in and grants the client everything it asked for, in one step. */
async function finish(
	provider: Provider,
	req: IncomingMessage,
	res: ServerResponse,
	details: Interaction,
	accountId: string,
): Promise<void> {
	const { params } = details;
	const grant = new provider.Grant({ accountId, clientId: String(params.client_id) });
	const requested = typeof params.scope === "string" ? params.scope.split(" ").filter(Boolean) : [];
	const otherScopes = requested.filter((scope) => !OIDC_SCOPES.has(scope));
	// Every requested scope is granted at the provider level too: the resource's scope is also a
	// scope the provider declares (clients name it when they register), so consent must cover it there.
	if (requested.length > 0) grant.addOIDCScope(requested.join(" "));
	if (typeof params.claims === "string") grant.addOIDCClaims(requestedClaims(params.claims));
	// The provider keeps, per resource, only the scopes that resource offers.
	const resources = Array.isArray(params.resource) ? params.resource : params.resource ? [params.resource] : [];
	for (const indicator of resources) {
		if (typeof indicator === "string" && otherScopes.length > 0)
			grant.addResourceScope(indicator, otherScopes.join(" "));
	}
	const grantId = await grant.save();
	await provider.interactionFinished(
		req,
		res,
		{ login: { accountId }, consent: { grantId } },
		{ mergeWithLastSubmission: false },
	);
}

/** The claim names of an OIDC `claims` request parameter (`{"id_token": {...}, "userinfo": {...}}`). */
function requestedClaims(parameter: string): string[] {
	const parsed: unknown = JSON.parse(parameter);
	if (typeof parsed !== "object" || parsed === null) return [];
	const names = new Set<string>();
	for (const part of Object.values(parsed)) {
		if (typeof part === "object" && part !== null) for (const name of Object.keys(part)) names.add(name);
	}
	return [...names];
}

async function readBody(req: IncomingMessage): Promise<string> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of req) {
		size += (chunk as Buffer).length;
		if (size > MAX_FORM_BYTES) throw new Error("form body too large");
		chunks.push(chunk as Buffer);
	}
	return Buffer.concat(chunks).toString("utf8");
}

function loginForm(uid: string, error?: string): string {
	const users = [...DEMO_USERS.keys()].join(", ");
	return layout(
		"Sign in",
		`${error ? `<p role="alert">${escapeHtml(error)}</p>` : ""}
<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<label>User <input name="login" autofocus></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button>
</form>
<p>Demo users: ${users}. The password is <code>${DEMO_PASSWORD}</code>.</p>`,
	);
}

function layout(title: string, body: string): string {
	return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;
}

function page(res: ServerResponse, status: number, html: string): void {
	res.writeHead(status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(html);
}

function escapeHtml(text: string): string {
	return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

// Run directly: `node scripts/oidc-idp.ts` (client id and secret from OIDC_CLIENT_ID / OIDC_CLIENT_SECRET).
if (import.meta.url === `file://${process.argv[1]}`) {
	const idp = await startIdp({
		port: 8790,
		clients: [
			{
				client_id: process.env.OIDC_CLIENT_ID ?? "mcp-edge-gateway",
				client_secret: process.env.OIDC_CLIENT_SECRET ?? "dev-oidc-client-secret",
				redirect_uris: ["http://127.0.0.1:8787/oauth/callback", "http://localhost:8787/oauth/callback"],
			},
		],
	});
	console.log(`OpenID Connect provider listening, issuer ${idp.issuer}`);
}
