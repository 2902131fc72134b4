import { env } from "cloudflare:test";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { Browser } from "../scripts/fixtures/browser.ts";
import { OverviewPage } from "../src/edge/dashboard/overview.tsx";
import { GuardsSchema, type Overview } from "../src/edge/dashboard/overview-data.ts";
import { eventually } from "./support/eventually.ts";
import { connectorToken, startConnector } from "./support/fake-connector.ts";
import {
	admin,
	BASE,
	BROWSER_ACCEPT,
	connectClient,
	createKey,
	gatewayFetch,
	openSession,
	readReply,
	rpc,
	TEST_ADMIN_BEARER,
	uniqueName,
} from "./support/gateway.ts";
import { identityTenant } from "./support/identity-upstream.ts";
import { textOf } from "./support/modern.ts";
import { gatewayWith, ORIGIN, testAccessRules } from "./support/oauth-client.ts";
import { registerServer, toolCallsOf, upstreamUrl } from "./support/upstreams.ts";

const IDP = inject("idpIssuer");

/** The dashboard's form posts as a browser on the gateway's own pages sends them. */
function formPost(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
	return gatewayFetch(path, {
		method: "POST",
		headers: { "content-type": "application/x-www-form-urlencoded", origin: BASE, ...headers },
		body: new URLSearchParams(fields).toString(),
		redirect: "manual",
	});
}

/** Signs in with the admin token's form; the cookie header a browser would send back. */
async function tokenSession(): Promise<string> {
	const response = await formPost("/admin/ui/sign-in", { token: TEST_ADMIN_BEARER });
	expect(response.status).toBe(303);
	const set = response.headers.getSetCookie().find((line) => line.startsWith("gw_admin="));
	if (!set) throw new Error("no admin session cookie");
	return set.split(";")[0] ?? "";
}

async function serverExists(name: string): Promise<boolean> {
	const response = await admin("GET", `/servers/${name}`);
	await response.body?.cancel();
	return response.status === 200;
}

describe("the dashboard without a sign-in", () => {
	it("answers /admin/ with the sign-in page (401) and shows nothing of the registry", async () => {
		const name = await registerServer("beta");
		const response = await gatewayFetch("/admin/");
		expect(response.status).toBe(401);
		expect(response.headers.get("content-type")).toMatch(/^text\/html/);
		expect(response.headers.get("cache-control")).toBe("no-store");
		expect(response.headers.get("x-frame-options")).toBe("DENY");
		const html = await response.text();
		expect(html).toContain("Sign in with the admin token");
		expect(html).not.toContain(name);
	});

	it("answers a server's page with the sign-in page (401), not the server", async () => {
		const name = await registerServer("beta");
		const response = await gatewayFetch(`/admin/ui/servers/${name}`);
		expect(response.status).toBe(401);
		expect(await response.text()).not.toContain(`Server ${name}`);
	});

	it("refuses a form post with 401 and registers nothing", async () => {
		const name = uniqueName("unsigned");
		const response = await formPost("/admin/ui/servers", { name, url: upstreamUrl("beta"), pinning: "warn" });
		expect(response.status).toBe(401);
		expect(await serverExists(name)).toBe(false);
	});

	it("sends /admin to /admin/", async () => {
		const response = await gatewayFetch("/admin", { redirect: "manual" });
		expect(response.status).toBe(308);
		expect(response.headers.get("location")).toBe("/admin/");
	});
});

describe("signing in with the admin token", () => {
	it("refuses a wrong token with 401 and sets no cookie", async () => {
		const response = await formPost("/admin/ui/sign-in", { token: "not-the-admin-token" });
		expect(response.status).toBe(401);
		expect(await response.text()).toContain("That is not the admin token.");
		expect(response.headers.getSetCookie()).toEqual([]);
	});

	it("sets an HttpOnly, SameSite=Strict session cookie under /admin that does not hold the token", async () => {
		const response = await formPost("/admin/ui/sign-in", { token: TEST_ADMIN_BEARER });
		expect(response.status).toBe(303);
		expect(response.headers.get("location")).toBe("/admin/");
		const [set] = response.headers.getSetCookie();
		expect(set).toMatch(/^gw_admin=[^;]+; Path=\/admin; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
		expect(set).not.toContain(TEST_ADMIN_BEARER);
		expect(set).not.toContain(btoa(TEST_ADMIN_BEARER).slice(0, 12));
	});

	it("shows the dashboard with the session cookie", async () => {
		const name = await registerServer("beta");
		const response = await gatewayFetch("/admin/", { headers: { cookie: await tokenSession() } });
		expect(response.status).toBe(200);
		const html = await response.text();
		expect(html).toContain("<h1>Gateway dashboard</h1>");
		expect(html).toContain(`>${name}</a>`);
	});

	it("refuses a session cookie that was not signed by the gateway", async () => {
		const forged = `gw_admin=${btoa(JSON.stringify({ token: "x", expiresAt: Date.now() + 60_000 }))}.AAAA`;
		const response = await gatewayFetch("/admin/", { headers: { cookie: forged } });
		expect(response.status).toBe(401);
	});

	it("ends every session when the admin token is rotated", async () => {
		const cookie = await tokenSession();
		const rotated = gatewayWith({ ADMIN_TOKEN: "rotated-admin-token-0123456789abcdefghij" });
		expect((await rotated(`${ORIGIN}/admin/`, { headers: { cookie } })).status).toBe(401);
		// The same cookie, the token unchanged: still in.
		expect((await gatewayWith({})(`${ORIGIN}/admin/`, { headers: { cookie } })).status).toBe(200);
	});

	it("does not open the bearer-only admin API: the cookie is no admin token there", async () => {
		const response = await gatewayFetch("/admin/servers", { headers: { cookie: await tokenSession() } });
		expect(response.status).toBe(401);
		expect(await response.json()).toMatchObject({ error: { kind: "unauthenticated" } });
	});

	it("signing out clears the session cookie and the person's sign-in", async () => {
		const response = await formPost("/admin/ui/sign-out", {}, { cookie: await tokenSession() });
		expect(response.status).toBe(303);
		const cleared = response.headers.getSetCookie();
		expect(cleared).toContainEqual(expect.stringMatching(/^gw_admin=; Path=\/admin; .*Max-Age=0/));
		expect(cleared).toContainEqual(expect.stringMatching(/^gw_person=; Path=\/; .*Max-Age=0/));
	});

	it("refuses the token's form posted from another site (login CSRF) with 403 and sets no cookie", async () => {
		const response = await formPost(
			"/admin/ui/sign-in",
			{ token: TEST_ADMIN_BEARER },
			{ origin: "https://evil.example" },
		);
		expect(response.status).toBe(403);
		expect(response.headers.getSetCookie()).toEqual([]);
	});
});

describe("the admin API's reference for the dashboard's operators", () => {
	it("opens /admin/docs and /admin/openapi.json to the admin token's dashboard session, exactly as the token gets them", async () => {
		const cookie = await tokenSession();
		const page = await gatewayFetch("/admin/docs", { headers: { cookie, accept: BROWSER_ACCEPT } });
		expect(page.status).toBe(200);
		expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
		expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
		expect(await page.text()).toContain("<h1>mcp-edge-gateway admin API");
		const document = await gatewayFetch("/admin/openapi.json", { headers: { cookie } });
		expect(document.status).toBe(200);
		expect(await document.json()).toEqual(await (await admin("GET", "/openapi.json")).json());
	});

	it("opens nothing else of /admin to the cookie: other reads and every write are 401, and nothing changes", async () => {
		const cookie = await tokenSession();
		const name = uniqueName("cookie");
		const headers = { cookie, origin: BASE, accept: BROWSER_ACCEPT, "content-type": "application/json" };
		const attempts: Array<[string, string, unknown]> = [
			["GET", "/admin/keys", undefined],
			["PUT", `/admin/servers/${name}`, { url: "https://example.com/mcp" }],
			["POST", "/admin/keys", { name }],
			["POST", "/admin/docs", {}],
			["DELETE", "/admin/openapi.json", undefined],
		];
		for (const [method, path, body] of attempts) {
			const response = await gatewayFetch(path, {
				method,
				headers,
				body: body === undefined ? undefined : JSON.stringify(body),
				redirect: "manual",
			});
			expect(response.status, `${method} ${path}`).toBe(401);
			expect(await response.json()).toMatchObject({ error: { kind: "unauthenticated" } });
		}
		expect(await serverExists(name)).toBe(false);
		const { keys } = (await (await admin("GET", "/keys")).json()) as { keys: Array<{ name?: string }> };
		expect(keys.some((key) => key.name === name)).toBe(false);
	});

	it("sends a browser without a sign-in to the dashboard's sign-in, naming the page to come back to", async () => {
		for (const path of ["/admin/docs", "/admin/openapi.json"]) {
			const response = await gatewayFetch(path, { headers: { accept: BROWSER_ACCEPT }, redirect: "manual" });
			expect(response.status).toBe(303);
			expect(response.headers.get("location")).toBe(`/admin/ui/sign-in?return=${encodeURIComponent(path)}`);
		}
	});

	it("answers an API client without Authorization, and a wrong token from anyone, with the 401 JSON as before", async () => {
		const requests: RequestInit[] = [
			{ headers: { accept: "application/json" } },
			{ headers: { accept: BROWSER_ACCEPT, authorization: "Bearer not-the-admin-token" } },
		];
		for (const init of requests) {
			for (const path of ["/admin/docs", "/admin/openapi.json"]) {
				const response = await gatewayFetch(path, { ...init, redirect: "manual" });
				expect(response.status).toBe(401);
				expect(response.headers.get("www-authenticate")).toContain("Bearer");
				expect(await response.json()).toMatchObject({ error: { kind: "unauthenticated" } });
			}
		}
	});
});

describe("the dashboard's forms refuse other sites (CSRF)", () => {
	it("refuses a cross-origin post with 403 and registers nothing, even with the operator's cookie", async () => {
		const name = uniqueName("csrf");
		const cookie = await tokenSession();
		const response = await formPost(
			"/admin/ui/servers",
			{ name, url: upstreamUrl("beta"), pinning: "warn" },
			{ cookie, origin: "https://evil.example" },
		);
		expect(response.status).toBe(403);
		expect(await response.text()).toContain("nothing was changed");
		expect(await serverExists(name)).toBe(false);
	});

	it("refuses a post without an Origin with 403 and revokes nothing", async () => {
		const { id } = await createKey({ name: uniqueName("kept") });
		const cookie = await tokenSession();
		const response = await gatewayFetch(`/admin/ui/keys/${id}/revoke`, {
			method: "POST",
			headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
			body: "",
		});
		expect(response.status).toBe(403);
		const keys = (await (await admin("GET", "/keys")).json()) as { keys: Array<{ id: string }> };
		expect(keys.keys.map((key) => key.id)).toContain(id);
	});

	it("registers a server posted from its own pages, through the admin API (same validation)", async () => {
		const cookie = await tokenSession();
		const name = uniqueName("form");
		const added = await formPost("/admin/ui/servers", { name, url: upstreamUrl("beta"), pinning: "block" }, { cookie });
		expect(added.status).toBe(303);
		expect(added.headers.get("location")).toBe(`/admin/ui/servers/${name}`);
		const registered = (await (await admin("GET", `/servers/${name}`)).json()) as { pinning: string };
		expect(registered.pinning).toBe("block");
		// The admin API's own refusal, as a page: a plain http URL is fine here, a malformed one is not.
		const refused = await formPost("/admin/ui/servers", { name: "Bad Name", url: "nope", pinning: "warn" }, { cookie });
		expect(refused.status).toBe(400);
		expect(await refused.text()).toContain("Bad Request: server name must be");
	});
});

describe("what the dashboard shows and writes", () => {
	afterEach(() => {
		vi.restoreAllMocks();
	});

	it("answers a server that does not exist with a 404 page", async () => {
		const response = await gatewayFetch(`/admin/ui/servers/${uniqueName("absent")}`, {
			headers: { cookie: await tokenSession() },
		});
		expect(response.status).toBe(404);
		expect(await response.text()).toContain("Not Found: no server named");
	});

	it("shows a server that takes each caller's own credentials as answering, in the neutral colour, not as broken", async () => {
		const cases = [
			{
				auth: "oauth",
				url: `http://127.0.0.1:${inject("oauthUpstreamPort")}/mcp`,
				words: "Answers; each caller signs in",
			},
			{ auth: "identity", url: identityTenant("dashboard").mcpUrl, words: "Answers; needs the caller's identity" },
		];
		const cookie = await tokenSession();
		for (const { auth, url, words } of cases) {
			const name = uniqueName(`per-caller-${auth}`);
			expect((await admin("PUT", `/servers/${name}?check=false`, { url, auth: { type: auth } })).status).toBe(201);
			const html = await (await gatewayFetch(`/admin/ui/servers/${name}`, { headers: { cookie } })).text();
			const check = /<p>Check: (.*?)<\/p>/s.exec(html)?.[1] ?? "";
			expect(check).toContain(`<span class="muted">${words.replace("'", "&#39;")}</span>`);
			expect(check).not.toContain('class="bad"');
			expect(check).not.toContain("Answers, but not as MCP");
		}
	});

	it("shows a name an attacker chose as text, never as markup", async () => {
		const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>`;
		await createKey({ name: hostile });
		const html = await (await gatewayFetch("/admin/", { headers: { cookie: await tokenSession() } })).text();
		expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;");
		expect(html).not.toContain("<script");
		expect(html).not.toContain("<img");
	});

	it("writes, for each action, a line naming the operator, then the admin API's own audit line", async () => {
		const { id } = await createKey({ name: uniqueName("audited") });
		const cookie = await tokenSession();
		const lines: string[] = [];
		vi.spyOn(console, "log").mockImplementation((line: unknown) => {
			lines.push(String(line));
		});
		const response = await formPost(`/admin/ui/keys/${id}/revoke`, {}, { cookie });
		expect(response.status).toBe(303);
		const events = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
		expect(events).toEqual([
			{ event: "dashboard_action", actor: "admin token", method: "DELETE", path: `/admin/keys/${id}` },
			{ event: "admin_audit", actor: "admin", action: "key.deleted", target: id },
		]);
	});
});

describe("people signed in with the gateway's own sign-in", () => {
	const SIGN_IN = {
		OIDC_ISSUER: IDP,
		OIDC_CLIENT_ID: "mcp-edge-gateway",
		OIDC_CLIENT_SECRET: "test-oidc-client-secret-0123456789",
	};
	const signingIn = gatewayWith(SIGN_IN);
	const rule = testAccessRules();

	/** A browser signed in as `login` at the provider, landed back on /admin/. */
	async function dashboardAs(login: string) {
		const browser = new Browser((url) => (url.origin === ORIGIN ? signingIn : undefined));
		const start = await browser.get(`${ORIGIN}/admin/ui/sign-in/person`);
		return browser.submit(start, { fields: { login, password: "demo" } });
	}

	it("a person whose rule does not grant admin gets the 403 page, naming them, and no registry", async () => {
		const name = await registerServer("beta");
		await rule({ match: { subject: "bob" }, priority: 0 });
		const page = await dashboardAs("bob");
		expect(page.url.pathname).toBe("/admin/");
		expect(page.status).toBe(403);
		expect(page.html).toContain("bob@contractor.example");
		expect(page.html).toContain("does not grant admin");
		expect(page.html).not.toContain(name);
	});

	it("a person whose rule grants admin sees the dashboard", async () => {
		const name = await registerServer("beta");
		await rule({ match: { subject: "alice" }, admin: true, priority: 0 });
		const page = await dashboardAs("alice");
		expect(page.status).toBe(200);
		expect(page.html).toContain("Signed in with alice@example.com");
		expect(page.html).toContain(`>${name}</a>`);
	});

	it("a person whose rule grants admin, sent from /admin/docs to sign in, comes back to the reference and reads it", async () => {
		await rule({ match: { subject: "alice" }, admin: true, priority: 0 });
		const browser = new Browser((url) => (url.origin === ORIGIN ? signingIn : undefined));
		const signIn = await browser.get(`${ORIGIN}/admin/docs`);
		expect(signIn.url.href).toBe(`${ORIGIN}/admin/ui/sign-in?return=%2Fadmin%2Fdocs`);
		const form = await browser.get(browser.link(signIn, "Sign in with your organisation"));
		const page = await browser.submit(form, { fields: { login: "alice", password: "demo" } });
		expect(page.url.href).toBe(`${ORIGIN}/admin/docs`);
		expect(page.status).toBe(200);
		expect(page.html).toContain("<h1>mcp-edge-gateway admin API");
	});

	it("a person whose rule does not grant admin gets the 403 page at /admin/docs in a browser, and the 401 JSON as an API client", async () => {
		await rule({ match: { subject: "bob" }, priority: 0 });
		const browser = new Browser((url) => (url.origin === ORIGIN ? signingIn : undefined));
		const form = await browser.get(`${ORIGIN}/connections/sign-in?return=%2Fadmin%2Fdocs`);
		// Stopped on the way back: the callback's answer holds bob's sign-in cookie.
		const back = await browser.submit(
			form,
			{ fields: { login: "bob", password: "demo" } },
			{ stopAt: (url) => url.pathname === "/admin/docs" },
		);
		const person = back.headers
			.getSetCookie()
			.find((line) => line.startsWith("gw_person="))
			?.split(";")[0];
		if (!person) throw new Error("no sign-in cookie");
		const page = await signingIn(`${ORIGIN}/admin/docs`, { headers: { cookie: person, accept: BROWSER_ACCEPT } });
		expect(page.status).toBe(403);
		const html = await page.text();
		expect(html).toContain("bob@contractor.example");
		expect(html).toContain("does not grant admin");
		expect(html).not.toContain("admin API");
		const api = await signingIn(`${ORIGIN}/admin/openapi.json`, { headers: { cookie: person } });
		expect(api.status).toBe(401);
		expect(await api.json()).toMatchObject({ error: { kind: "unauthenticated" } });
	});

	it("a rule's admin grant is false unless given, and listed by the admin API", async () => {
		const plain = await rule({ match: { subject: "carol" } });
		const granting = await rule({ match: { subject: "dave" }, admin: true });
		const { accessRules } = (await (await admin("GET", "/access-rules")).json()) as {
			accessRules: Array<{ name: string; admin: boolean }>;
		};
		expect(accessRules.find((listed) => listed.name === plain)?.admin).toBe(false);
		expect(accessRules.find((listed) => listed.name === granting)?.admin).toBe(true);
	});
});

describe("the call figures", () => {
	it("count a server's tool calls and errors over the last hour (GET /admin/call-counts)", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey({ servers: [server] });
		const path = `/mcp/${server}`;
		const sessionId = await openSession(path, key);
		const call = async (id: number, name: string) =>
			readReply(
				await rpc(path, key, sessionId, { jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: {} } }),
			);
		await call(2, "whoami");
		await call(3, "fail");
		const counted = await eventually(
			async () => {
				const { servers } = (await (await admin("GET", "/call-counts")).json()) as {
					servers: Array<{ server: string; calls: number; errors: number }>;
				};
				const row = servers.find((entry) => entry.server === server);
				return row && row.calls === 2 ? row : null;
			},
			"both calls counted",
			15_000,
		);
		expect(counted).toEqual({ server, calls: 2, errors: 1 });
		expect(env.CALL_COUNTS).toBeDefined();
	});
});

describe("a server reached through connectors, on the dashboard", () => {
	/** A connector server and one of its tokens, made through the admin API. */
	async function connectorServer() {
		const name = uniqueName("conn");
		expect((await admin("PUT", `/servers/${name}?check=false`, { connector: {} })).status).toBe(201);
		const { id, token } = await connectorToken(name);
		return { name, tokenId: id, token };
	}

	const tokenIds = async (name: string) =>
		(
			(await (await admin("GET", `/servers/${name}/connector-tokens`)).json()) as {
				connectorTokens: Array<{ id: string }>;
			}
		).connectorTokens.map(({ id }) => id);

	it("its page says no connector is online, then lists the connector (id, token, host, version, sessions) and the token", async () => {
		const cookie = await tokenSession();
		const { name, tokenId, token } = await connectorServer();
		const before = await (await gatewayFetch(`/admin/ui/servers/${name}`, { headers: { cookie } })).text();
		expect(before).toContain("No connector online.");
		expect(before).toContain(tokenId);
		expect(before).toContain(`aria-label="Revoke ${tokenId}"`);
		const connector = await startConnector(name, token, { upstream: upstreamUrl("beta"), host: "files-host" });
		const after = await (await gatewayFetch(`/admin/ui/servers/${name}`, { headers: { cookie } })).text();
		expect(after).not.toContain("No connector online.");
		for (const shown of [
			connector.id,
			"files-host",
			'<td data-label="Version">test</td>',
			'<td data-label="Sessions">0</td>',
		]) {
			expect(after).toContain(shown);
		}
		expect(after).toContain(`<td data-label="Token">${tokenId}</td>`);
	});

	it("the servers list says a connector server is reached via connectors, and a URL server's row is as before", async () => {
		const cookie = await tokenSession();
		const { name } = await connectorServer();
		const byUrl = await registerServer("beta");
		const html = await (await gatewayFetch("/admin/", { headers: { cookie } })).text();
		expect(html).toContain(`${name}</a><br/><span class="muted">via connectors</span>`);
		expect(html).toContain(`${byUrl}</a></td>`);
	});

	it("makes a connector token from the server's page and shows it once: on the page after the form, not after a reload", async () => {
		const cookie = await tokenSession();
		const { name, tokenId } = await connectorServer();
		const made = await formPost(`/admin/ui/servers/${name}/connector-tokens`, {}, { cookie });
		expect(made.status).toBe(303);
		expect(made.headers.get("location")).toBe("/admin/ui/connector-tokens/new");
		const sealed = made.headers.getSetCookie().find((line) => line.startsWith("gw_new_connector_token="));
		expect(sealed).toContain("Path=/admin/ui/connector-tokens/new");
		expect(sealed).not.toContain("mcpgwc1_");
		const shown = await gatewayFetch("/admin/ui/connector-tokens/new", {
			headers: { cookie: `${cookie}; ${sealed?.split(";")[0]}` },
		});
		const html = await shown.text();
		const token = /mcpgwc1_[A-Za-z0-9_.-]+/.exec(html)?.[0];
		expect(token).toBeDefined();
		expect(shown.headers.getSetCookie().some((line) => /^gw_new_connector_token=;.*Max-Age=0/i.test(line))).toBe(true);
		const ids = await tokenIds(name);
		expect(ids).toHaveLength(2);
		const newId = ids.find((id) => id !== tokenId) ?? "";
		expect(html).toContain(`Id ${newId}.`);
		// The made token admits a connector of this server.
		await startConnector(name, token ?? "", { upstream: upstreamUrl("beta") });
		const reloaded = await (await gatewayFetch("/admin/ui/connector-tokens/new", { headers: { cookie } })).text();
		expect(reloaded).toContain("The connector token was shown once");
		expect(reloaded).not.toContain("mcpgwc1_");
	});

	it("revokes a token through the admin API's route, dropping its connector (4001); a post from another site revokes nothing", async () => {
		const cookie = await tokenSession();
		const { name, tokenId, token } = await connectorServer();
		const connector = await startConnector(name, token, { upstream: upstreamUrl("beta") });
		const path = `/admin/ui/servers/${name}/connector-tokens/${tokenId}/revoke`;
		const forged = await formPost(path, {}, { cookie, origin: "https://evil.example" });
		expect(forged.status).toBe(403);
		expect(await tokenIds(name)).toEqual([tokenId]);
		const revoked = await formPost(path, {}, { cookie });
		expect(revoked.status).toBe(303);
		expect(revoked.headers.get("location")).toBe(`/admin/ui/servers/${name}`);
		expect(await tokenIds(name)).toEqual([]);
		expect((await connector.closed).code).toBe(4001);
		const unknown = await formPost(path, {}, { cookie });
		expect(unknown.status).toBe(404);
		expect(await unknown.text()).toContain(`has no connector token &#39;${tokenId}&#39;`);
	});
});

describe("a server made from an OpenAPI document, on the dashboard", () => {
	/** Two operations, an API key and HTTP basic; its calls go where the server's baseUrl says. */
	const NOTES_DOCUMENT = {
		openapi: "3.1.0",
		info: { title: "Notes", version: "1" },
		servers: [{ url: "http://127.0.0.1:9/api" }],
		components: {
			securitySchemes: {
				apiKey: { type: "apiKey", in: "header", name: "X-Api-Key" },
				basic: { type: "http", scheme: "basic" },
			},
		},
		security: [{ apiKey: [] }],
		paths: {
			"/notes": {
				get: { operationId: "listNotes", responses: { "200": { description: "the notes" } } },
				post: { operationId: "createNote", responses: { "201": { description: "made" } } },
			},
		},
	};

	async function documentServer(openapi: Record<string, unknown>): Promise<string> {
		const name = uniqueName("doc");
		const put = await admin("PUT", `/servers/${name}?check=false`, {
			openapi: { document: NOTES_DOCUMENT, ...openapi },
		});
		expect(put.status, await put.clone().text()).toBe(201);
		return name;
	}

	it("the servers list says a document server's tools come from an OpenAPI document", async () => {
		const cookie = await tokenSession();
		const name = await documentServer({});
		const html = await (await gatewayFetch("/admin/", { headers: { cookie } })).text();
		expect(html).toContain(`${name}</a><br/><span class="muted">from an OpenAPI document</span>`);
	});

	it("its page shows where the document came from, the base URL, how many tools, and the credentials by scheme, a literal masked", async () => {
		const cookie = await tokenSession();
		const name = await documentServer({
			baseUrl: "http://127.0.0.1:9/v2",
			credentials: { apiKey: "${UPSTREAM_NOTES_KEY}", basic: "user:hush-hush" },
		});
		const html = await (await gatewayFetch(`/admin/ui/servers/${name}`, { headers: { cookie } })).text();
		expect(html).toContain("<h2>OpenAPI document</h2>");
		expect(html).toContain("Document: given inline (its text is kept in the registry).");
		expect(html).toContain("Base URL: <code>http://127.0.0.1:9/v2</code>.");
		expect(html).toContain("Tools: 2 (its operations, before shaping).");
		expect(html).toContain(
			'<td data-label="Security scheme" class="nowrap">apiKey</td><td data-label="Credential"><code>${UPSTREAM_NOTES_KEY}</code></td>',
		);
		expect(html).toContain(
			'<td data-label="Security scheme" class="nowrap">basic</td><td data-label="Credential"><code>***</code></td>',
		);
		expect(html).not.toContain("hush-hush");
	});

	it("a document server without credentials says its requests carry none, and uses the document's first server", async () => {
		const cookie = await tokenSession();
		const name = await documentServer({});
		const html = await (await gatewayFetch(`/admin/ui/servers/${name}`, { headers: { cookie } })).text();
		expect(html).toContain("Base URL: the document&#39;s first server.");
		expect(html).toContain(
			"No credentials: its requests carry none, unless the server&#39;s auth gives the caller&#39;s.",
		);
	});
});

describe("the dashboard's approvals queue", () => {
	it("lists a waiting call with who, server, tool and arguments; Deny with a reason fails it and Approve sends the other once; then the queue is empty", {
		timeout: 90_000,
	}, async () => {
		const server = await registerServer("beta");
		const policy = uniqueName("queue");
		const made = await admin("PUT", `/policies/${policy}`, {
			expression: 'tool.name == "add"',
			effect: "approve",
			applies: { servers: [server] },
		});
		expect(made.status).toBe(201);
		const key = await createKey({ servers: [server] });
		const { client } = await connectClient(`/mcp/${server}`, key.key);
		const cookie = await tokenSession();
		const outcomes: unknown[] = [];
		const sent: Array<{ a: number; b: number }> = [];
		for (const decision of ["deny", "approve"] as const) {
			const args = { a: 9_000_000 + Math.floor(Math.random() * 1_000_000_000), b: 3 };
			sent.push(args);
			const called = client.callTool({ name: "add", arguments: args }).catch((error: unknown) => error);
			// Waited for through the admin API, then the page is rendered once: a render checks every
			// registered server, which takes seconds on a loaded machine.
			await eventually(
				async () => {
					const listed = (await (await admin("GET", "/approvals")).json()) as {
						approvals: Array<{ arguments: string }>;
					};
					return listed.approvals.some((entry) => entry.arguments === JSON.stringify(args));
				},
				"the waiting call listed",
				20_000,
			);
			const html = await (await gatewayFetch("/admin/", { headers: { cookie } })).text();
			expect(html).toContain(`{&quot;a&quot;:${args.a},&quot;b&quot;:3}`);
			expect(html).toContain(key.id);
			const id = /\/admin\/ui\/approvals\/([^/"]+)\/approve/.exec(html)?.[1];
			expect(id).toBeDefined();
			const posted = await formPost(
				`/admin/ui/approvals/${id}/${decision}`,
				decision === "deny" ? { reason: "not on a Friday" } : {},
				{ cookie },
			);
			expect(posted.status).toBe(303);
			expect(posted.headers.get("location")).toBe("/admin/#approvals");
			outcomes.push(await called);
			expect(await toolCallsOf("beta", "add", args)).toHaveLength(decision === "approve" ? 1 : 0);
		}
		expect(String(outcomes[0])).toContain("An approver denied the call of 'add'");
		expect(String(outcomes[0])).toContain("not on a Friday");
		expect(textOf(outcomes[1] as object)).toBe(String((sent[1]?.a ?? 0) + 3));
		const after = await (await gatewayFetch("/admin/", { headers: { cookie } })).text();
		for (const args of sent) expect(after).not.toContain(`{&quot;a&quot;:${args.a},`);
		await client.close();
		await admin("DELETE", `/policies/${policy}`);
	});
});

/** The rows of a section's table, each as its cells' text (tags dropped, entities as the page wrote them). */
function tableRows(html: string, section: string): string[][] {
	const body = new RegExp(`<section id="${section}">(.*?)</section>`, "s").exec(html)?.[1] ?? "";
	const rows = /<tbody>(.*?)<\/tbody>/s.exec(body)?.[1] ?? "";
	return [...rows.matchAll(/<tr>(.*?)<\/tr>/gs)].map((row) =>
		[...(row[1] ?? "").matchAll(/<td[^>]*>(.*?)<\/td>/gs)].map((cell) =>
			(cell[1] ?? "").replace(/<br\/?>/g, "; ").replace(/<[^>]+>/g, ""),
		),
	);
}

describe("content guards on the dashboard", () => {
	// A render checks every registered server: generous on a loaded machine.
	it("lists each guard in name order with its stage, where it applies, its detectors and its action", {
		timeout: 60_000,
	}, async () => {
		const server = await registerServer("beta");
		const prefix = uniqueName("shown");
		const guards = {
			[`${prefix}-b`]: { stage: "request", applies: { servers: [server] }, detect: ["card"], action: "block" },
			[`${prefix}-a`]: {
				stage: "response",
				applies: { servers: [server], tools: ["get_*", "read_*"] },
				detect: ["secrets", "email"],
				action: "redact",
			},
		};
		for (const [name, guard] of Object.entries(guards)) {
			expect((await admin("PUT", `/guards/${name}`, guard)).status).toBe(201);
		}
		const response = await gatewayFetch("/admin/", { headers: { cookie: await tokenSession() } });
		expect(response.status).toBe(200);
		const html = await response.text();
		expect(html).toContain('<a href="#guards">Guards</a>');
		const mine = tableRows(html, "guards").filter((row) => row[0]?.startsWith(prefix));
		expect(mine).toEqual([
			[`${prefix}-a`, "response", `servers: ${server}; tools: get_*, read_*`, "secrets, email", "redact"],
			[`${prefix}-b`, "request", `servers: ${server}`, "card", "block"],
		]);
		for (const name of Object.keys(guards)) expect((await admin("DELETE", `/guards/${name}`)).status).toBe(204);
	});
});

describe("a guard's row, as the dashboard renders a listing", () => {
	it("shows a webhook guard by its URL alone, never its secret's reference, and a guard without applies as applying everywhere", async () => {
		// A listing as the admin API shows a webhook guard: its secret is a Worker secret's reference.
		const { guards } = GuardsSchema.parse({
			guards: [
				{
					name: "org-scanner",
					stage: "request",
					applies: null,
					action: "block",
					webhook: {
						url: "https://scanner.example/hook",
						secret: "${UPSTREAM_SCANNER_SECRET}",
						timeoutMs: 2000,
						onFailure: "block",
					},
					createdAt: "2026-01-01T00:00:00.000Z",
					updatedAt: "2026-01-01T00:00:00.000Z",
				},
			],
		});
		const overview: Overview = {
			servers: [],
			virtualServers: [],
			keys: [],
			accessRules: [],
			policies: [],
			guards,
			approvals: [],
			connections: [],
		};
		const html = String(
			await OverviewPage({ overview, figures: { unavailable: "", source: "" }, peopleSignIn: true }).toString(),
		);
		expect(tableRows(html, "guards")).toEqual([
			["org-scanner", "request", "everywhere", "webhook https://scanner.example/hook", "block"],
		]);
		expect(html).not.toContain("SCANNER_SECRET");
	});
});
