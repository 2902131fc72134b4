import { exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { describe, expect, it } from "vitest";
import type { IdentityWhoami } from "../scripts/fixtures/control-shapes.ts";
import { admin, connectClient, createKey, uniqueName } from "./support/gateway.ts";
import { configureIdentity, identityLog, identityTenant, postJwks } from "./support/identity-upstream.ts";
import { issuerCall, newIssuer } from "./support/jwt-issuer.ts";
import { gatewayWith, ORIGIN, personToken, testAccessRules } from "./support/oauth-client.ts";

/**
 * Servers that see the caller without an account of their own: `identity`
 * (each request carries a JWT the gateway signs, verified by the upstream
 * against the gateway's JWKS) and `token-exchange` (the person's access token
 * from OAUTH_ISSUER exchanged, RFC 8693, for one the upstream accepts). The
 * upstream is a real verifier (scripts/fixtures/identity-upstream.ts); people
 * sign in at a real issuer (scripts/fixtures/jwt-issuer.ts).
 */

const accessRule = testAccessRules();
const worker: typeof fetch = (input, init) => exports.default.fetch(new Request(input, init));

async function registerServer(url: string, auth: Record<string, unknown>): Promise<string> {
	const name = uniqueName("callers");
	const response = await admin("PUT", `/servers/${name}`, { url, auth });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

/** An SDK client through `gateway` with `token` as its bearer, asking `whoami`. */
async function whoamiThrough(gateway: typeof fetch, path: string, token: string): Promise<IdentityWhoami> {
	const client = new Client(
		{ name: "callers", version: "1" },
		{ jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
	);
	await client.connect(
		new StreamableHTTPClientTransport(new URL(`${ORIGIN}${path}`), {
			fetch: gateway,
			requestInit: { headers: { authorization: `Bearer ${token}` } },
		}),
	);
	try {
		return (await client.callTool({ name: "whoami", arguments: {} })).structuredContent as unknown as IdentityWhoami;
	} finally {
		await client.close();
	}
}

describe("identity: the upstream verifies who calls against the gateway's JWKS", () => {
	it("an API key's calls carry an assertion naming the key, signed by a key the JWKS publishes", async () => {
		const tenant = identityTenant("key");
		await postJwks(tenant.base, await (await worker("http://gateway.test/.well-known/jwks.json")).json());
		await configureIdentity(tenant.base, { issuer: "http://gateway.test" });
		const server = await registerServer(tenant.mcpUrl, { type: "identity" });
		const key = await createKey({ servers: [server] });
		const { client } = await connectClient(`/mcp/${server}`, key.key);
		const result = await client.callTool({ name: "whoami", arguments: {} });
		expect(result.structuredContent).toMatchObject({
			sub: `key:${key.id}`,
			key_id: key.id,
			iss: "http://gateway.test",
		});
		await client.close();
		// No request reached the upstream without a verified assertion, and none carried the API key.
		const log = await identityLog(tenant.base);
		expect(log.length).toBeGreaterThan(0);
		expect(JSON.stringify(log)).not.toContain(key.key);
	});

	it("two people calling one identity server at once each reach it as themselves", async () => {
		const issuer = newIssuer("people");
		const gateway = gatewayWith({ OAUTH_ISSUER: issuer, OAUTH_SCOPES: "mcp" });
		const tenant = identityTenant("people");
		await postJwks(tenant.base, await (await gateway(`${ORIGIN}/.well-known/jwks.json`)).json());
		await configureIdentity(tenant.base, { issuer: ORIGIN });
		const server = await registerServer(tenant.mcpUrl, { type: "identity" });
		await accessRule({ match: { emailDomain: "example.com" }, servers: [server] });
		const [alice, bob] = await Promise.all([
			personToken(issuer, "alice", "alice@example.com"),
			personToken(issuer, "bob", "bob@example.com"),
		]);
		const answers = await Promise.all(
			[alice, bob, alice, bob].map((token) => whoamiThrough(gateway, `/mcp/${server}`, token)),
		);
		expect(answers.map((claims) => claims.sub)).toEqual(["alice", "bob", "alice", "bob"]);
		expect(answers.map((claims) => claims.email)).toEqual([
			"alice@example.com",
			"bob@example.com",
			"alice@example.com",
			"bob@example.com",
		]);
	});
});

describe("token-exchange: the person's token is exchanged for one the upstream accepts", () => {
	it("a person's calls carry the exchanged token (verified by the upstream against the issuer's keys), one exchange for many calls", async () => {
		const issuer = newIssuer("exchange");
		const gateway = gatewayWith({ OAUTH_ISSUER: issuer, OAUTH_SCOPES: "mcp" });
		const audience = "https://tools.internal/";
		const tenant = identityTenant("exchange");
		await configureIdentity(tenant.base, { issuer, audience, jwksUrl: `${issuer}/jwks` });
		const server = await registerServer(tenant.mcpUrl, {
			type: "token-exchange",
			tokenEndpoint: `${issuer}/token`,
			audience,
			scopes: ["tools"],
		});
		await accessRule({ match: { subject: "alice" }, servers: [server] });
		const token = await personToken(issuer, "alice", "alice@example.com");
		const claims = await whoamiThrough(gateway, `/mcp/${server}`, token);
		expect(claims).toMatchObject({ sub: "alice", iss: issuer });
		await whoamiThrough(gateway, `/mcp/${server}`, token);
		const stats = await issuerCall<{ exchanges: number }>(issuer, "/stats");
		// Two sessions, each initialize + initialized + tools/call + DELETE: one exchange for all of them.
		expect(stats.exchanges).toBe(1);
		// The person's own token never reached the upstream: only the exchanged one did.
		expect(JSON.stringify(await identityLog(tenant.base))).not.toContain(token);
	});

	it("an API key cannot be exchanged: its call is refused with a sentence, and nothing reaches the token endpoint", async () => {
		const issuer = newIssuer("no-subject");
		const tenant = identityTenant("no-subject");
		const server = await registerServer(tenant.mcpUrl, {
			type: "token-exchange",
			tokenEndpoint: `${issuer}/token`,
			audience: "https://tools.internal/",
		});
		const key = await createKey({ servers: [server] });
		// Registering checked the server (with no caller, so no credential): that is all it has seen.
		const registered = (await identityLog(tenant.base)).length;
		const response = await worker(`http://gateway.test/mcp/${server}`, {
			method: "POST",
			headers: {
				authorization: `Bearer ${key.key}`,
				accept: "application/json, text/event-stream",
				"content-type": "application/json",
			},
			body: JSON.stringify({
				jsonrpc: "2.0",
				id: 1,
				method: "initialize",
				params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
			}),
		});
		const reply = (await response.json()) as { error?: { message: string; data?: { kind?: string } } };
		expect(reply.error?.data?.kind).toBe("upstream_auth_required");
		expect(reply.error?.message).toContain("cannot be exchanged");
		expect((await issuerCall<{ exchanges: number }>(issuer, "/stats")).exchanges).toBe(0);
		expect(await identityLog(tenant.base)).toHaveLength(registered);
	});
});
