import { env, listDurableObjectIds } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, inject, it } from "vitest";
import { Browser, type Page } from "../scripts/fixtures/browser.ts";
import type { OAuthUpstreamStats } from "../scripts/fixtures/control-shapes.ts";
import { userIdOf } from "../src/auth/authorization-server.ts";
import { settingsFrom } from "../src/config.ts";
import { callerOf } from "../src/credentials/caller.ts";
import { connectLinkUrl, newConnectLink } from "../src/credentials/connect-link.ts";
import { credentialsFor } from "../src/credentials/credentials-for.ts";
import type { TokenVaultDO } from "../src/credentials/vault-do.ts";
import { GatewayError } from "../src/mcp/gateway-error.ts";
import { eventually } from "./support/eventually.ts";
import {
	admin,
	BASE,
	connectClient,
	createKey,
	gatewayFetch,
	mcpHeaders,
	openSession,
	postInitialize,
	type RpcReply,
	readReply,
	rpc,
	uniqueName,
} from "./support/gateway.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import {
	CLIENT_REDIRECT,
	gatewayWith,
	type MemoryOAuthProvider,
	ORIGIN,
	oauthClient,
	signInAs,
	testAccessRules,
} from "./support/oauth-client.ts";

const IDP = inject("idpIssuer");
const UPSTREAM = `http://127.0.0.1:${inject("peopleUpstreamPort")}`;
/** People sign in at the organisation's authorization server (the test IdP); the gateway is its resource server. */
const gateway = gatewayWith({ OAUTH_ISSUER: IDP, OAUTH_SCOPES: "mcp" });
const _atClient = (url: URL) => url.href.startsWith(CLIENT_REDIRECT);
const accessRule = testAccessRules();

/** The test Worker itself, for the API-key paths (host gateway.test). */
const worker: typeof fetch = (input, init) => exports.default.fetch(new Request(input, init));

/**
 * A browser that reaches the gateway through its app (the OAuth tests' origin,
 * or the test Worker's host) and everything else, the upstream's
 * authorization server included, over the network.
 */
function personBrowser(): Browser {
	return new Browser((url) => (url.origin === ORIGIN ? gateway : url.origin === BASE ? worker : undefined));
}

/** The connect link an answer's -32042 error carries. */
function linkIn(reply: RpcReply): string {
	const data = reply.error?.data as { elicitations?: Array<{ url?: string }> } | undefined;
	return String(data?.elicitations?.[0]?.url);
}

/** An `oauth` server on the fixture, under a fresh name. */
async function registerOAuthServer(auth: Record<string, unknown> = { type: "oauth" }): Promise<string> {
	const name = uniqueName("people");
	const response = await admin("PUT", `/servers/${name}`, { url: `${UPSTREAM}/mcp`, auth });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

/** A person's access token at the gateway: the SDK's sign-in at the organisation's authorization server. */
function signIn(path: string, login: string) {
	return signInAs(gateway, path, login);
}

/** The connect link of a -32042 error. */
function connectLinkOf(error: unknown): string {
	expect(error).toBeInstanceOf(McpError);
	const failure = error as McpError;
	expect(failure.code).toBe(ErrorCode.UrlElicitationRequired);
	const data = failure.data as { elicitations: Array<{ mode: string; url: string; elicitationId: string }> };
	expect(data.elicitations[0]?.mode).toBe("url");
	return data.elicitations[0]?.url ?? "";
}

/** Opens a connect link and signs in at the upstream's own authorization server as `user`. */
async function connectAt(browser: Browser, link: string, user: string): Promise<Page> {
	const form = await browser.get(link);
	expect(form.url.origin).toBe(UPSTREAM);
	return browser.submit(form, { fields: { user } });
}

async function upstreamStats(): Promise<OAuthUpstreamStats> {
	return (await fetch(`${UPSTREAM}/_stats`)).json();
}

async function upstreamControl(route: string, body: unknown = {}): Promise<void> {
	const response = await fetch(`${UPSTREAM}${route}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify(body),
	});
	if (!response.ok) throw new Error(`upstream ${route}: ${response.status}`);
}

/** A key with a connection to a fresh `oauth` server, made through its link as `user`. */
async function connectedKey(user: string): Promise<{ server: string; key: { id: string; key: string } }> {
	const server = await registerOAuthServer();
	const key = await createKey({ servers: [server] });
	const link = linkIn(await readReply(await postInitialize(`/mcp/${server}`, key.key)));
	const done = await connectAt(personBrowser(), link, user);
	expect(done.status).toBe(200);
	return { server, key };
}

/** The SDK client of a signed-in person on `path`, connected. */
async function clientOf(path: string, provider: MemoryOAuthProvider) {
	const session = oauthClient(path, provider, gateway);
	await session.client.connect(session.transport);
	return session.client;
}

describe("Upstreams see the person: oauth servers", () => {
	it("two people connect through the -32042 link and each sees themselves, also calling at once", async () => {
		const server = await registerOAuthServer();
		await accessRule({ match: { group: "engineering" }, servers: [server] });
		await accessRule({ match: { subject: "bob" }, servers: [server] });
		const people = await Promise.all(
			["alice", "bob"].map(async (login) => {
				const { provider } = await signIn(`/mcp/${server}`, login);
				// Never connected: the initialize on the transparent endpoint answers -32042 with the link.
				const refused = oauthClient(`/mcp/${server}`, provider, gateway);
				const link = connectLinkOf(await refused.client.connect(refused.transport).catch((error: unknown) => error));
				expect(new URL(link).pathname).toBe(`/connect/${server}`);
				const done = await connectAt(personBrowser(), link, login);
				expect(done.status).toBe(200);
				expect(done.html).toContain(`Connected to ${server}`);
				return { login, client: await clientOf(`/mcp/${server}`, provider) };
			}),
		);
		const answers = await Promise.all(
			people.flatMap(({ login, client }) =>
				[1, 2, 3].map(async () => ({ login, result: await client.callTool({ name: "whoami", arguments: {} }) })),
			),
		);
		for (const { login, result } of answers) expect(result.content).toEqual([{ type: "text", text: login }]);
		for (const { client } of people) await client.close();
	});

	it("a link is single use and refused when forged: each is a page, and nothing is stored", async () => {
		const server = await registerOAuthServer();
		const key = await createKey({ servers: [server] });
		const link = linkIn(await readReply(await postInitialize(`/mcp/${server}`, key.key)));
		const forged = new URL(link);
		forged.searchParams.set("link", `${forged.searchParams.get("link")?.slice(0, -4)}AAAA`);
		const forgedPage = await personBrowser().get(forged);
		expect(forgedPage.status).toBe(400);
		expect(forgedPage.html).toContain("not valid");
		const first = await personBrowser().get(link);
		expect(first.url.origin).toBe(UPSTREAM);
		const again = await personBrowser().get(link);
		expect(again.status).toBe(410);
		expect(again.html).toContain("already used");
		// Nothing stored for the key: the flow was started, never finished.
		const vault = env.VAULTS.get(env.VAULTS.idFromName(`key:${key.id}`)) as DurableObjectStub<TokenVaultDO>;
		expect(await vault.connections()).toEqual([]);
	});

	it("an expired link and a callback with a forged state are each a page, and nothing is stored", async () => {
		const server = await registerOAuthServer();
		const key = await createKey({ servers: [server] });
		const registered = (await (await admin("GET", `/servers/${server}`)).json()) as { generation: string };
		const old = newConnectLink(
			callerOf(key.id, null),
			{ name: server, generation: registered.generation },
			Date.now() - 11 * 60_000,
		);
		const expired = await personBrowser().get(await connectLinkUrl(BASE, String(env.SESSION_SECRET), old));
		expect(expired.status).toBe(410);
		expect(expired.html).toContain("expired");
		const forged = await personBrowser().get(
			`${BASE}/connect/callback?code=abc&state=${"x".repeat(40)}.${"y".repeat(32)}`,
		);
		expect(forged.status).toBe(400);
		expect(forged.html).toContain("cannot be used");
		const vault = env.VAULTS.get(env.VAULTS.idFromName(`key:${key.id}`)) as DurableObjectStub<TokenVaultDO>;
		expect(await vault.connections()).toEqual([]);
	});

	it("an API key connects in a browser holding no gateway credentials, and its calls reach the upstream as the account it connected", async () => {
		const server = await registerOAuthServer();
		const key = await createKey({ servers: [server] });
		const refused = await postInitialize(`/mcp/${server}`, key.key);
		expect(refused.status).toBe(200);
		const error = (await readReply(refused)).error;
		expect(error?.code).toBe(-32042);
		expect(error?.message).toContain("has not been connected yet");
		const done = await connectAt(personBrowser(), linkIn({ error }), "carol");
		expect(done.html).toContain(`Connected to ${server}`);
		const { client } = await connectClient(`/mcp/${server}`, key.key);
		expect((await client.callTool({ name: "whoami", arguments: {} })).content).toEqual([
			{ type: "text", text: "carol" },
		]);
		await client.close();
		const listed = await (await admin("GET", `/connections?server=${server}`)).json();
		expect(listed).toMatchObject({ connections: [{ server, keyId: key.id }] });
		expect(JSON.stringify(listed)).not.toMatch(/token/i);
	});

	it("on an aggregate, a server the person has not connected contributes nothing, and the instructions name the connections page", async () => {
		const server = await registerOAuthServer();
		const key = await createKey({ servers: [server] });
		const { client } = await connectClient("/mcp", key.key);
		expect(client.getInstructions()).toContain(server);
		expect(client.getInstructions()).toContain("/connections");
		const tools = (await client.listTools()).tools;
		expect(tools.some((tool) => tool.name.startsWith(`${server}__`))).toBe(false);
		await client.close();
	});

	it("a tool call from a client that declares no URL elicitation gets an error result whose sentence holds the link", async () => {
		const server = await registerOAuthServer();
		const key = await createKey({ servers: [server] });
		const done = await connectAt(
			personBrowser(),
			linkIn(await readReply(await postInitialize(`/mcp/${server}`, key.key))),
			"carol",
		);
		expect(done.status).toBe(200);
		const { client } = await connectClient(`/mcp/${server}`, key.key);
		// Disconnected by the operator while the session lives: the next call needs a connection again.
		const cut = await admin("DELETE", `/connections?server=${server}&key=${key.id}`);
		expect(await cut.json()).toEqual({ disconnected: true });
		const result = await client.callTool({ name: "echo", arguments: { text: "hi" } });
		expect(result.isError).toBe(true);
		const text = (result.content as Array<{ text: string }>)[0]?.text ?? "";
		expect(text).toMatch(new RegExp(`${BASE}/connect/${server}\\?link=`));
		await client.close();
	});

	it("a refresh after the access token expires: eight concurrent calls share one request to the token endpoint", async () => {
		await upstreamControl("/_control/reset");
		// Tokens that expire within the vault's refresh margin: every use asks for a fresh one.
		await upstreamControl("/_control/configure", { accessTokenTtlSeconds: 30 });
		try {
			const { server, key } = await connectedKey("carol");
			// A raw session: no listening stream asks for tokens meanwhile.
			const sessionId = await openSession(`/mcp/${server}`, key.key);
			const before = await upstreamStats();
			await upstreamControl("/_control/configure", { refreshDelayGate: true });
			const calls = Array.from({ length: 8 }, (_, index) =>
				rpc(`/mcp/${server}`, key.key, sessionId, {
					jsonrpc: "2.0",
					id: 10 + index,
					method: "tools/call",
					params: { name: "whoami", arguments: {} },
				}).then(readReply),
			);
			await eventually(async () => (await upstreamStats()).refreshesWaiting === 1, "one refresh held at the gate");
			// The refreshed token lives long: a call that reaches the gateway after the refresh uses it as it is.
			await upstreamControl("/_control/configure", { accessTokenTtlSeconds: 3600 });
			await upstreamControl("/_control/release");
			for (const reply of await Promise.all(calls)) {
				expect(reply.result?.content).toEqual([{ type: "text", text: "carol" }]);
			}
			const after = await upstreamStats();
			expect(after.refreshes - before.refreshes).toBe(1);
		} finally {
			await upstreamControl("/_control/reset");
		}
	});

	it("a listening GET stream of a transparent session reaches the upstream with the person's token", async () => {
		const { server, key } = await connectedKey("alice");
		const sessionId = await openSession(`/mcp/${server}`, key.key);
		const before = (await upstreamStats()).mcpRequests.alice ?? 0;
		const listening = await gatewayFetch(`/mcp/${server}`, {
			method: "GET",
			headers: {
				...mcpHeaders(key.key, sessionId, { "mcp-protocol-version": "2025-11-25" }),
				accept: "text/event-stream",
			},
		});
		// The upstream took the GET as alice's (an operator's or no credential would have met its 401).
		expect(listening.status).toBe(200);
		expect(listening.headers.get("content-type")).toContain("text/event-stream");
		await eventually(
			async () => ((await upstreamStats()).mcpRequests.alice ?? 0) > before,
			"the GET counted as alice's",
		);
		await listening.body?.cancel();
	});

	it("a write whose token is refused mid-call is not sent again with the refreshed one; the next call goes through", async () => {
		const { server, key } = await connectedKey("bob");
		// A raw session: nothing else of bob's (no listening stream) reaches the upstream meanwhile.
		const sessionId = await openSession(`/mcp/${server}`, key.key);
		const call = (id: number, name: string, args: Record<string, unknown>) =>
			rpc(`/mcp/${server}`, key.key, sessionId, {
				jsonrpc: "2.0",
				id,
				method: "tools/call",
				params: { name, arguments: args },
			}).then(readReply);
		await call(2, "whoami", {});
		await upstreamControl("/_control/expire-access-tokens");
		const before = await upstreamStats();
		const write = await call(3, "echo", { text: "once" });
		expect(write.result?.isError).toBe(true);
		expect(JSON.stringify(write.result?.content)).toContain("was not performed");
		const after = await upstreamStats();
		// Refused, refreshed once, and the echo not sent again: the upstream served no request of bob's meanwhile.
		expect(after.refreshes - before.refreshes).toBe(1);
		expect(after.mcpRequests.bob ?? 0).toBe(before.mcpRequests.bob ?? 0);
		expect((await call(4, "whoami", {})).result?.content).toEqual([{ type: "text", text: "bob" }]);
	});

	it("a 2026-07-28 client is asked for the connection as input_required with a URL elicitation, and its retry goes through", async () => {
		const server = await registerOAuthServer();
		const key = await createKey({ servers: [server] });
		const envelope = {
			...ENVELOPE,
			"io.modelcontextprotocol/clientCapabilities": { elicitation: { url: {} } },
		};
		const call = () =>
			modernPost(`/mcp/${server}`, key.key, {
				id: 7,
				method: "tools/call",
				params: { name: "whoami", arguments: {}, _meta: envelope },
			});
		const asked = (await (await call()).json()) as { result: Record<string, unknown> };
		expect(asked.result.resultType).toBe("input_required");
		const request = (
			asked.result.inputRequests as Record<string, { method: string; params: { mode: string; url: string } }>
		).connect;
		expect(request?.method).toBe("elicitation/create");
		expect(request?.params.mode).toBe("url");
		const done = await connectAt(personBrowser(), request?.params.url ?? "", "carol");
		expect(done.status).toBe(200);
		const answered = await readReply(await call());
		expect(answered.result?.content).toEqual([{ type: "text", text: "carol" }]);
	});

	it("the stateless path: a 2026-07-28 client of a 2026-07-28 oauth upstream connects, then calls as itself with no session object", async () => {
		const name = uniqueName("stateless");
		const registered = await admin("PUT", `/servers/${name}`, {
			url: `${UPSTREAM}/mcp-modern`,
			auth: { type: "oauth" },
		});
		expect(registered.status).toBe(201);
		const key = await createKey({ servers: [name] });
		const envelope = { ...ENVELOPE, "io.modelcontextprotocol/clientCapabilities": { elicitation: { url: {} } } };
		const call = (id: number) =>
			modernPost(`/mcp/${name}`, key.key, {
				id,
				method: "tools/call",
				params: { name: "whoami", arguments: {}, _meta: envelope },
			}).then(readReply);
		const asked = await call(1);
		expect(asked.result?.resultType).toBe("input_required");
		const requests = (asked.result?.inputRequests ?? {}) as Record<string, { params: { url: string } }>;
		const url = requests.connect?.params.url ?? "";
		expect((await connectAt(personBrowser(), url, "alice")).status).toBe(200);
		const sessionsBefore = (await listDurableObjectIds(env.SESSIONS)).length;
		for (const id of [2, 3, 4, 5]) expect((await call(id)).result?.content).toEqual([{ type: "text", text: "alice" }]);
		// 2026-07-28 to 2026-07-28 costs no session object, with the person's token as with the operator's.
		expect((await listDurableObjectIds(env.SESSIONS)).length).toBe(sessionsBefore);
	});

	it("connecting makes the server's tools appear in the person's live aggregate session at once", async () => {
		const server = await registerOAuthServer();
		const key = await createKey({ servers: [server] });
		const { client } = await connectClient("/mcp", key.key);
		expect((await client.listTools()).tools.some((tool) => tool.name === `${server}__whoami`)).toBe(false);
		const link = linkIn(await readReply(await postInitialize(`/mcp/${server}`, key.key)));
		await connectAt(personBrowser(), link, "carol");
		expect((await client.listTools()).tools.map((tool) => tool.name)).toContain(`${server}__whoami`);
		const result = await client.callTool({ name: `${server}__whoami`, arguments: {} });
		expect(result.content).toEqual([{ type: "text", text: "carol" }]);
		await client.close();
	});

	it("a person's disconnect revokes the tokens at the upstream (RFC 7009) and the next call asks to connect again", async () => {
		const { server, key } = await connectedKey("carol");
		const before = await upstreamStats();
		const cut = await admin("DELETE", `/connections?server=${server}&key=${key.id}`);
		expect(await cut.json()).toEqual({ disconnected: true });
		await eventually(
			async () => (await upstreamStats()).revocations > before.revocations,
			"a revocation at the upstream",
		);
		const listed = (await (await admin("GET", `/connections?server=${server}`)).json()) as { connections: unknown[] };
		expect(listed.connections).toEqual([]);
		const again = await readReply(await postInitialize(`/mcp/${server}`, key.key));
		expect(again.error?.code).toBe(-32042);
	});

	it("without a usable TOKEN_VAULT_KEY an oauth server's credentials are refused as misconfigured, naming the setting, and no vault is asked", async () => {
		const vaultsBefore = (await listDurableObjectIds(env.VAULTS)).length;
		for (const TOKEN_VAULT_KEY of [undefined, "too-short"]) {
			const credentials = credentialsFor(
				{ name: "tools", url: `${UPSTREAM}/mcp`, generation: "g1", auth: { type: "oauth" } },
				() => ({ caller: callerOf("key_unkeyed", null), origin: BASE, subjectToken: null }),
				{ ...env, TOKEN_VAULT_KEY },
				settingsFrom(env),
			);
			const refused = await credentials?.headers().catch((error: unknown) => error);
			expect(refused).toBeInstanceOf(GatewayError);
			expect((refused as GatewayError).kind).toBe("misconfigured");
			expect((refused as GatewayError).message).toContain("TOKEN_VAULT_KEY");
		}
		expect((await listDurableObjectIds(env.VAULTS)).length).toBe(vaultsBefore);
	});

	it("removing a person's access rule deletes what they connected under it and revokes it at the upstream", async () => {
		const server = await registerOAuthServer();
		const rule = await accessRule({ match: { subject: "alice" }, servers: [server] });
		const { provider } = await signIn(`/mcp/${server}`, "alice");
		const refused = oauthClient(`/mcp/${server}`, provider, gateway);
		const link = connectLinkOf(await refused.client.connect(refused.transport).catch((error: unknown) => error));
		await connectAt(personBrowser(), link, "alice");
		const listed = (await (await admin("GET", `/connections?server=${server}`)).json()) as { connections: unknown[] };
		expect(listed.connections).toMatchObject([{ server, subject: "alice", rule }]);
		const before = await upstreamStats();
		expect((await admin("DELETE", `/access-rules/${rule}`)).status).toBe(204);
		const after = (await (await admin("GET", `/connections?server=${server}`)).json()) as { connections: unknown[] };
		expect(after.connections).toEqual([]);
		await eventually(
			async () => (await upstreamStats()).revocations > before.revocations,
			"a revocation at the upstream",
		);
	});
});

describe("a person's connect link asks the browser who it is", () => {
	const SIGN_IN = {
		OIDC_ISSUER: IDP,
		OIDC_CLIENT_ID: "mcp-edge-gateway",
		OIDC_CLIENT_SECRET: "test-oidc-client-secret-0123456789",
	};
	const signingIn = gatewayWith(SIGN_IN);
	/** A browser signed in to the gateway's own pages as `login`, at the organisation's provider. */
	async function signedInBrowser(login: string): Promise<Browser> {
		const browser = new Browser((url) => (url.origin === ORIGIN ? signingIn : undefined));
		const form = await browser.get(`${ORIGIN}/connections/sign-in?return=/`);
		const landed = await browser.submit(form, { fields: { login, password: "demo" } });
		expect(landed.url.pathname).toBe("/");
		return browser;
	}
	/** A link for `login` as the gateway makes one (the person is alice or bob of the provider). */
	async function linkFor(login: string, server: string): Promise<string> {
		const registered = (await (await admin("GET", `/servers/${server}`)).json()) as { generation: string };
		const identity = { issuer: IDP, subject: login, email: null, groups: [] };
		const caller = callerOf(`oauth~r~g~${await userIdOf(identity)}`, identity);
		const link = newConnectLink(caller, { name: server, generation: registered.generation }, Date.now());
		return connectLinkUrl(ORIGIN, String(env.SESSION_SECRET), link);
	}

	it("opened with no sign-in, it asks the browser to sign in first, and spends nothing", async () => {
		const server = await registerOAuthServer();
		const link = await linkFor("alice", server);
		const page = await new Browser((url) => (url.origin === ORIGIN ? signingIn : undefined)).get(link);
		expect(page.status).toBe(401);
		expect(page.html).toContain("Sign in");
		// Unspent: alice, signed in, can still use it.
		const alice = await signedInBrowser("alice");
		expect((await alice.get(link)).url.origin).toBe(UPSTREAM);
	});

	it("opened in a browser signed in as someone else, it is refused with a page, and the link stays unspent", async () => {
		const server = await registerOAuthServer();
		const link = await linkFor("alice", server);
		const bob = await signedInBrowser("bob");
		const refused = await bob.get(link);
		expect(refused.status).toBe(403);
		expect(refused.html).toContain("made for someone else");
		const alice = await signedInBrowser("alice");
		expect((await alice.get(link)).url.origin).toBe(UPSTREAM);
	});
});
