import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, inject, it } from "vitest";
import { Browser, type Page } from "../scripts/fixtures/browser.ts";
import type { OAuthUpstreamStats } from "../scripts/fixtures/control-shapes.ts";
import type { TokenVaultDO } from "../src/credentials/vault-do.ts";
import {
	admin,
	BASE,
	connectClient,
	createKey,
	postInitialize,
	type RpcReply,
	readReply,
	uniqueName,
} from "./support/gateway.ts";
import {
	CLIENT_REDIRECT,
	gatewayWith,
	MemoryOAuthProvider,
	ORIGIN,
	oauthClient,
	testAccessRules,
} from "./support/oauth-client.ts";

const IDP = inject("idpIssuer");
const UPSTREAM = `http://127.0.0.1:${inject("oauthUpstreamPort")}`;
/** People sign in at the organisation's authorization server (the test IdP); the gateway is its resource server. */
const gateway = gatewayWith({ OAUTH_ISSUER: IDP, OAUTH_SCOPES: "mcp" });
const atClient = (url: URL) => url.href.startsWith(CLIENT_REDIRECT);
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
async function signIn(path: string, login: string) {
	const provider = new MemoryOAuthProvider();
	const first = oauthClient(path, provider, gateway);
	await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
	const authorizationUrl = provider.authorizationUrl;
	if (!authorizationUrl) throw new Error("the client was not sent to sign in");
	const browser = new Browser();
	const loginPage = await browser.get(authorizationUrl, { stopAt: atClient });
	const landed = await browser.submit(loginPage, { fields: { login, password: "demo" } }, { stopAt: atClient });
	const code = landed.url.searchParams.get("code");
	if (!code) throw new Error(`no code: ${landed.url.href}`);
	await first.transport.finishAuth(code);
	return { provider, token: provider.saved?.access_token ?? "" };
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
});
