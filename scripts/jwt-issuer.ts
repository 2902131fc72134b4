/**
 * A real OAuth authorization server's token side, for the external-issuer
 * tests: it holds RS256 and ES256 key pairs (made with jose), publishes them
 * as a JWKS, publishes RFC 8414 metadata, and signs whatever claims a test
 * asks for, so tests in workerd verify tokens from a genuine issuer rather
 * than from keys they made up. Run directly: `node scripts/jwt-issuer.ts [port]`
 * prints `jwt issuer listening on <port>`.
 *
 * Every route exists once per tenant: without a prefix for the root issuer
 * `http://127.0.0.1:<port>`, and under `/t/<name>` for the issuer
 * `http://127.0.0.1:<port>/t/<name>` (created on first use, with its own keys
 * and counters). Tenants keep tests that rotate or reconfigure an issuer
 * from disturbing each other, and give every tenant issuer a path, as
 * RFC 8414's path insertion expects.
 *
 * Discovery (which documents a tenant answers is set by `/configure`):
 * - `GET /.well-known/oauth-authorization-server[/t/<name>]` (RFC 8414, path inserted)
 * - `GET /.well-known/openid-configuration[/t/<name>]` (OpenID Connect, path inserted)
 * - `GET [/t/<name>]/.well-known/openid-configuration` (OpenID Connect, path appended)
 * Each answers `{ issuer, jwks_uri }`, or 404 when the tenant does not publish that kind.
 *
 * Keys and test control, under the tenant's prefix:
 * - `GET /jwks`: the public keys (the current RS256 key and the ES256 key), counted.
 * - `GET /stats`: `{ jwks, metadata }`, how many times each was fetched.
 * - `POST /sign` `{ claims, alg?: "RS256"|"ES256", kid?, typ?, header? }` → `{ token }`:
 *   the claims signed exactly as given (nothing added) with the current key of
 *   that algorithm; `kid` overrides the header's key id, `typ` sets one
 *   (default: none), `header` adds further protected header parameters.
 * - `POST /rotate` → `{ kid }`: a new RS256 key with a new kid; the old one leaves the JWKS.
 * - `POST /configure` `{ discovery?, claimedIssuer? }` → 204: `discovery`
 *   ("oauth-authorization-server" by default, or "openid-configuration") picks
 *   the kind of metadata published; `claimedIssuer` makes the metadata name
 *   another issuer than the tenant's own (a misconfigured or spoofed server).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";

export interface RunningJwtIssuer {
	port: number;
	/** The root tenant's issuer, `http://127.0.0.1:<port>`. */
	issuer: string;
	close(): Promise<void>;
}

type SigningAlg = "RS256" | "ES256";

interface SigningKey {
	kid: string;
	privateKey: CryptoKey;
	publicJwk: JWK;
}

type Discovery = "oauth-authorization-server" | "openid-configuration";

interface Tenant {
	issuer: string;
	keys: Record<SigningAlg, SigningKey>;
	discovery: Discovery;
	claimedIssuer: string | null;
	hits: { jwks: number; metadata: number };
}

interface SignRequest {
	claims: JWTPayload;
	alg?: SigningAlg;
	kid?: string;
	typ?: string;
	header?: Record<string, unknown>;
}

const JSON_HEADERS = { "content-type": "application/json" };
/** A tenant's name: short and URL-safe, so it can sit in a path unescaped. */
const TENANT_NAME = /^[a-z0-9-]{1,64}$/;
const OAUTH_METADATA = "/.well-known/oauth-authorization-server";
const OPENID_METADATA = "/.well-known/openid-configuration";

let keyCounter = 0;

async function newKey(alg: SigningAlg): Promise<SigningKey> {
	const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
	keyCounter += 1;
	const kid = `${alg.toLowerCase()}-${keyCounter}-${Date.now().toString(36)}`;
	return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg, use: "sig" } };
}

/** Starts the issuer on 127.0.0.1; resolves once it listens. */
export async function startJwtIssuer(options: { port?: number } = {}): Promise<RunningJwtIssuer> {
	const tenants = new Map<string, Promise<Tenant>>();
	let origin = "";

	/** The tenant `name` ("" for the root), made with fresh keys on first use. */
	function tenant(name: string): Promise<Tenant> {
		let made = tenants.get(name);
		if (!made) {
			made = (async () => ({
				issuer: name === "" ? origin : `${origin}/t/${name}`,
				keys: { RS256: await newKey("RS256"), ES256: await newKey("ES256") },
				discovery: "oauth-authorization-server" as Discovery,
				claimedIssuer: null,
				hits: { jwks: 0, metadata: 0 },
			}))();
			tenants.set(name, made);
		}
		return made;
	}

	async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		const path = new URL(req.url ?? "/", origin).pathname;
		const metadata = metadataRequest(path);
		if (metadata) {
			if (req.method !== "GET") return reply(res, 405, { error: "method not allowed" });
			const current = await tenant(metadata.tenant);
			current.hits.metadata += 1;
			if (current.discovery !== metadata.kind) return reply(res, 404, { error: "not published" });
			return reply(res, 200, { issuer: current.claimedIssuer ?? current.issuer, jwks_uri: `${current.issuer}/jwks` });
		}
		const route = tenantRoute(path);
		if (!route) return reply(res, 404, { error: "not found" });
		const current = await tenant(route.tenant);
		const action = `${req.method} ${route.rest}`;
		switch (action) {
			case "GET /jwks":
				current.hits.jwks += 1;
				return reply(res, 200, { keys: [current.keys.RS256.publicJwk, current.keys.ES256.publicJwk] });
			case "GET /stats":
				return reply(res, 200, current.hits);
			case "POST /sign":
				return reply(res, 200, { token: await sign(current, (await readJson(req)) as SignRequest) });
			case "POST /rotate":
				current.keys.RS256 = await newKey("RS256");
				return reply(res, 200, { kid: current.keys.RS256.kid });
			case "POST /configure": {
				const body = (await readJson(req)) as { discovery?: Discovery; claimedIssuer?: string | null };
				if (body.discovery !== undefined) current.discovery = body.discovery;
				if (body.claimedIssuer !== undefined) current.claimedIssuer = body.claimedIssuer;
				res.writeHead(204).end();
				return;
			}
			default:
				return reply(res, 404, { error: `no route ${action}` });
		}
	}

	const server = createServer((req, res) => {
		handle(req, res).catch((error: unknown) => {
			console.error(`jwt issuer: ${req.method} ${req.url} failed:`, error);
			if (!res.headersSent) reply(res, 500, { error: String(error) });
			else res.destroy();
		});
	});
	await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	origin = `http://127.0.0.1:${port}`;
	return {
		port,
		issuer: origin,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** Which tenant's metadata of which kind `path` asks for, or null when it asks for none. */
function metadataRequest(path: string): { tenant: string; kind: Discovery } | null {
	for (const [prefix, kind] of [
		[OAUTH_METADATA, "oauth-authorization-server"],
		[OPENID_METADATA, "openid-configuration"],
	] as const) {
		// Path insertion (RFC 8414 section 3.1): the well-known prefix, then the issuer's path.
		if (path === prefix) return { tenant: "", kind };
		const inserted = path.startsWith(`${prefix}/t/`) ? path.slice(`${prefix}/t/`.length) : null;
		if (inserted !== null && TENANT_NAME.test(inserted)) return { tenant: inserted, kind };
	}
	// Path appending (OpenID Connect Discovery 1.0 section 4): the issuer's path, then the well-known suffix.
	const appended = /^\/t\/([^/]+)\/\.well-known\/openid-configuration$/.exec(path)?.[1];
	if (appended !== undefined && TENANT_NAME.test(appended)) return { tenant: appended, kind: "openid-configuration" };
	return null;
}

/** The tenant a non-metadata path belongs to and the route within it, or null for a malformed tenant name. */
function tenantRoute(path: string): { tenant: string; rest: string } | null {
	const match = /^\/t\/([^/]+)(\/.*)$/.exec(path);
	if (!match) return { tenant: "", rest: path };
	const [, name, rest] = match;
	if (name === undefined || rest === undefined || !TENANT_NAME.test(name)) return null;
	return { tenant: name, rest };
}

async function sign(current: Tenant, request: SignRequest): Promise<string> {
	const alg = request.alg ?? "RS256";
	const key = current.keys[alg];
	const header = { ...request.header, alg, kid: request.kid ?? key.kid, ...(request.typ ? { typ: request.typ } : {}) };
	return new SignJWT(request.claims).setProtectedHeader(header).sign(key.privateKey);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
	const chunks: Buffer[] = [];
	for await (const chunk of req) chunks.push(chunk as Buffer);
	const text = Buffer.concat(chunks).toString("utf8");
	return text === "" ? {} : JSON.parse(text);
}

function reply(res: ServerResponse, status: number, body: unknown): void {
	res.writeHead(status, JSON_HEADERS).end(JSON.stringify(body));
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const issuer = await startJwtIssuer({ port: process.argv[2] ? Number(process.argv[2]) : undefined });
	console.log(`jwt issuer listening on ${issuer.port}`);
}
