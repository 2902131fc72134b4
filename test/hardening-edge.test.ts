import { env, listDurableObjectIds } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { settingsFrom } from "../src/config.ts";
import { createApp } from "../src/edge/app.ts";
import { resolveTarget, targetOrProblem } from "../src/upstream/upstream-target.ts";
import {
	admin,
	BASE,
	createKey,
	gatewayFetch,
	initializeBody,
	mcpHeaders,
	openSession,
	postInitialize,
	readReply,
	rpc,
	TEST_ADMIN_BEARER,
	testAddress,
	uniqueName,
} from "./support/gateway.ts";
import { registerServer, upstreamUrl } from "./support/upstreams.ts";

const PING = { jsonrpc: "2.0", id: 1, method: "ping" };

/** The gateway's answer with another env: the edge reads its settings from the env it is given. */
async function fetchWithEnv(overrides: Record<string, string>, request: Request): Promise<Response> {
	return await createApp().fetch(request, { ...env, ...overrides });
}

async function errorOf(response: Response): Promise<{ kind?: string; message: string }> {
	const body = (await response.json()) as {
		error: { message: string; kind?: string; data?: { kind?: string } };
	};
	return { kind: body.error.kind ?? body.error.data?.kind, message: body.error.message };
}

describe("host validation (DNS rebinding)", () => {
	it("a request for a host that is not the gateway's gets 403 before authentication, on MCP and admin routes", async () => {
		for (const path of ["/mcp", "/mcp/anything", "/admin/servers"]) {
			const response = await exports.default.fetch(
				new Request(`${BASE}${path}`, {
					method: "POST",
					headers: {
						host: "evil.example.com",
						origin: "http://evil.example.com",
						"content-type": "application/json",
						accept: "application/json, text/event-stream",
					},
					body: JSON.stringify(initializeBody()),
				}),
			);
			expect(response.status).toBe(403);
			const { kind, message } = await errorOf(response);
			expect(kind).toBe("forbidden_host");
			expect(message).toContain("evil.example.com");
		}
	});

	it("a request whose URL names a foreign host gets 403 too", async () => {
		const response = await exports.default.fetch(new Request("http://evil.example.com/healthz"));
		expect(response.status).toBe(403);
	});

	it("the gateway's own hosts pass whatever the port, and a session opened with them works", async () => {
		const server = await registerServer("beta");
		const { key } = await createKey();
		for (const host of ["gateway.test:443", "localhost:8787", "127.0.0.1"]) {
			const health = await exports.default.fetch(new Request(`${BASE}/healthz`, { headers: { host } }));
			expect(health.status).toBe(200);
		}
		const sessionId = await openSession(`/mcp/${server}`, key, {
			host: "localhost:8787",
			origin: "http://localhost:8787",
		});
		expect((await rpc(`/mcp/${server}`, key, sessionId, PING)).status).toBe(200);
	});

	it("ALLOWED_HOSTS entries of the form *.example.com allow every subdomain and nothing else", async () => {
		const hosts = { ALLOWED_HOSTS: "*.example.com" };
		const sub = await fetchWithEnv(hosts, new Request("http://a.b.example.com/healthz"));
		expect(sub.status).toBe(200);
		for (const host of ["example.com", "badexample.com", "example.com.evil.net"]) {
			expect((await fetchWithEnv(hosts, new Request(`http://${host}/healthz`))).status).toBe(403);
		}
	});
});

describe("configuration that cannot be safe is refused", () => {
	it("an ADMIN_TOKEN shorter than 32 characters refuses every request with a sentence naming the setting, not its value", async () => {
		const tooShort = "short-token";
		const response = await fetchWithEnv({ ADMIN_TOKEN: tooShort }, new Request(`${BASE}/healthz`));
		expect(response.status).toBe(500);
		const text = await response.text();
		expect(text).toContain("misconfigured");
		expect(text).toContain("ADMIN_TOKEN must be at least 32 characters");
		expect(text).not.toContain(tooShort);
		expect(() => settingsFrom({ ADMIN_TOKEN: "x".repeat(31) })).toThrow(/ADMIN_TOKEN/);
		expect(settingsFrom({ ADMIN_TOKEN: "x".repeat(32) }).adminToken).toHaveLength(32);
	});

	it("a plain-http upstream is refused at PUT unless ALLOW_HTTP_UPSTREAMS=true, and https is accepted", async () => {
		const put = (url: string) =>
			fetchWithEnv(
				{ ALLOW_HTTP_UPSTREAMS: "false" },
				new Request(`${BASE}/admin/servers/${uniqueName("plain")}`, {
					method: "PUT",
					headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}`, "content-type": "application/json" },
					body: JSON.stringify({ url }),
				}),
			);
		const plain = await put("http://upstream.example.com/mcp");
		expect(plain.status).toBe(400);
		expect((await errorOf(plain)).message).toMatch(/ALLOW_HTTP_UPSTREAMS=true/);
		expect((await put("https://upstream.example.com/mcp")).status).toBe(201);
	});

	it("a plain-http upstream registered before the rule is refused at connect time as misconfigured", () => {
		const server = { name: "old", url: "http://upstream.example.com/mcp", headers: {}, timeoutSeconds: null };
		const limits = { defaultTimeoutMs: 1000, maxReplyBytes: 1000, allowHttpUpstreams: false };
		expect(() => resolveTarget(server, {}, limits)).toThrow(/misconfigured/);
		expect(resolveTarget(server, {}, { ...limits, allowHttpUpstreams: true }).url).toBe(server.url);
	});

	it("an upstream URL with user:password is refused with 400", async () => {
		const response = await admin("PUT", `/servers/${uniqueName("userinfo")}`, {
			url: "https://user:pass@upstream.example.com/mcp",
		});
		expect(response.status).toBe(400);
		expect((await errorOf(response)).message).toMatch(/must not carry credentials/);
	});

	it("header values with CR or LF are refused at PUT, not at every later call", async () => {
		for (const value of ["a\r\nX-Injected: 1", "a\nb", "a\rb"]) {
			const response = await admin("PUT", `/servers/${uniqueName("crlf")}`, {
				url: upstreamUrl("beta"),
				headers: { "X-Team": value },
			});
			expect(response.status).toBe(400);
			expect((await errorOf(response)).message).toMatch(/headers\.X-Team: must be one line/);
		}
	});

	it("user paths with '.' or '..' segments are refused for keys and virtual servers", async () => {
		for (const userPath of ["/team/..", "/team/./a", "/.."]) {
			const key = await admin("POST", "/keys", { userPath });
			expect(key.status).toBe(400);
			expect((await errorOf(key)).message).toMatch(/'\.' or '\.\.' segments/);
		}
		const member = await registerServer("beta");
		const virtual = await admin("PUT", `/virtual-servers/${uniqueName("vs")}`, {
			servers: [member],
			userPaths: ["/team/../admin"],
		});
		expect(virtual.status).toBe(400);
	});

	it("URL query values are masked in admin listings like header values", async () => {
		const name = uniqueName("query");
		const created = await admin("PUT", `/servers/${name}`, {
			url: "https://upstream.example.com/mcp?token=query-secret&team=blue",
		});
		expect(created.status).toBe(201);
		for (const response of [await admin("GET", `/servers/${name}`), await admin("GET", "/servers")]) {
			const text = await response.text();
			expect(text).not.toContain("query-secret");
			expect(text).not.toContain("blue");
			expect(text).toContain("https://upstream.example.com/mcp?token=***&team=***");
		}
	});
});

describe("secrets in server headers", () => {
	it("a header referencing a secret not named UPSTREAM_... is refused at PUT with 400, and nothing is stored", async () => {
		for (const secret of ["SESSION_SECRET", "ADMIN_TOKEN", "upstream_lower", "GITHUB_TOKEN"]) {
			const name = uniqueName("leak");
			const response = await admin("PUT", `/servers/${name}`, {
				url: upstreamUrl("beta"),
				headers: { Authorization: `Bearer \${${secret}}` },
			});
			expect(response.status).toBe(400);
			expect((await errorOf(response)).message).toContain("only secrets named UPSTREAM_");
			expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
		}
	});

	it("a header referencing an UPSTREAM_ secret is accepted and resolved; the gateway's own secrets are never resolved", () => {
		const server = {
			name: "s",
			url: "https://upstream.example.com/mcp",
			headers: { Authorization: "Bearer ${UPSTREAM_TOKEN}" },
			timeoutSeconds: null,
		};
		const limits = { defaultTimeoutMs: 1000, maxReplyBytes: 1000, allowHttpUpstreams: false };
		expect(resolveTarget(server, { UPSTREAM_TOKEN: "t0k3n" }, limits).headers.Authorization).toBe("Bearer t0k3n");
		// A record stored before the rule, referencing one of the gateway's own secrets, is refused, not resolved.
		for (const own of ["SESSION_SECRET", "ADMIN_TOKEN", "KEY_SECRET", "OIDC_CLIENT_SECRET"]) {
			const legacy = { ...server, headers: { Authorization: `Bearer \${${own}}` } };
			expect(() => resolveTarget(legacy, { [own]: "s3cr3t-value" }, limits)).toThrow(/misconfigured/);
			expect(targetOrProblem(legacy, { [own]: "s3cr3t-value" }, limits)).toEqual({
				problem: `header Authorization references \${${own}}, which is not an UPSTREAM_ secret and is never resolved`,
			});
		}
	});
});

describe("one spelling per session ID", () => {
	const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

	it("only the canonical encoding of the MAC verifies: the three other spellings of its last character get 404 without waking a Durable Object", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const { key } = await createKey();
		const sessionId = await openSession(path, key);
		const last = ALPHABET.indexOf(sessionId.slice(-1));
		// The last of 43 characters carries 4 bits of the MAC and 2 unused ones.
		const spellings = [0, 1, 2, 3]
			.map((low) => ALPHABET[(last & ~3) | low])
			.filter((char) => char !== sessionId.slice(-1))
			.map((char) => sessionId.slice(0, -1) + char);
		expect(spellings).toHaveLength(3);
		const before = (await listDurableObjectIds(env.SESSIONS)).length;
		for (const spelling of spellings) {
			const response = await rpc(path, key, spelling, PING);
			expect(response.status).toBe(404);
		}
		expect((await listDurableObjectIds(env.SESSIONS)).length).toBe(before);
		expect((await rpc(path, key, sessionId, PING)).status).toBe(200);
	});
});

describe("client input that keys the gateway's maps is bounded", () => {
	it("a request id longer than 256 characters is refused with 400; 256 characters pass", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const { key } = await createKey();
		const sessionId = await openSession(path, key);
		const long = await rpc(path, key, sessionId, { ...PING, id: "x".repeat(257) });
		expect(long.status).toBe(400);
		expect((await readReply(long)).error?.message).toMatch(/request id is longer than 256 characters/);
		const fits = await rpc(path, key, sessionId, { ...PING, id: "x".repeat(256) });
		expect(fits.status).toBe(200);
	});

	it("a progress token longer than 256 characters is refused with 400", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const { key } = await createKey();
		const sessionId = await openSession(path, key);
		const response = await rpc(path, key, sessionId, {
			jsonrpc: "2.0",
			id: 2,
			method: "tools/call",
			params: { name: "echo", arguments: { text: "x" }, _meta: { progressToken: "p".repeat(257) } },
		});
		expect(response.status).toBe(400);
		expect((await readReply(response)).error?.message).toMatch(/progress token is longer than 256/);
	});
});

describe("limits per key", () => {
	it("a key over its request rate gets 429 with Retry-After; another key is not affected", async () => {
		const { key } = await createKey();
		const other = await createKey();
		// Cheap authenticated requests: a DELETE without a session is refused right after the limits.
		const send = (bearer: string) =>
			gatewayFetch("/mcp", { method: "DELETE", headers: { authorization: `Bearer ${bearer}` } });
		let passed = 0;
		let limited: Response | undefined;
		// The limit is 400 per 60 s window; a window that rolls over mid-test allows up to twice that.
		for (let i = 0; i < 801 && !limited; i++) {
			const response = await send(key);
			if (response.status === 429) limited = response;
			else {
				expect(response.status).toBe(400);
				passed++;
			}
		}
		expect(limited).toBeDefined();
		expect(passed).toBeGreaterThanOrEqual(400);
		expect(limited?.headers.get("retry-after")).toBe("60");
		const { kind, message } = await errorOf(limited as Response);
		expect(kind).toBe("rate_limited");
		expect(message).toMatch(/rate limit/);
		expect((await send(other.key)).status).toBe(400);
	});

	it("200 garbage, forged and revoked keys from one address never lock it out: a valid key from that address is then served", async () => {
		const ip = testAddress();
		const { key } = await createKey();
		const revoked = await createKey();
		await admin("DELETE", `/keys/${revoked.id}`);
		const attempt = (bearer: string) =>
			gatewayFetch("/mcp", {
				method: "DELETE",
				headers: { authorization: `Bearer ${bearer}`, "cf-connecting-ip": ip },
			});
		// A forged key: the shape of a real one, with a MAC that is not the gateway's.
		const forged = (i: number) =>
			`${key.slice(0, key.lastIndexOf(".") - 3)}${String(i).padStart(3, "0")}${key.slice(key.lastIndexOf("."))}`;
		const garbage = [
			(i: number) => `mcpgw_not-a-key-${i}`,
			forged,
			() => revoked.key,
			(i: number) => `not-a-key-at-all-${i}`,
		];
		const statuses = new Set<number>();
		for (let i = 0; i < 200; i++) {
			const make = garbage[i % garbage.length] as (i: number) => string;
			statuses.add((await attempt(make(i))).status);
		}
		expect([...statuses]).toEqual([401]);
		// Authenticated and past every limit: a DELETE without a session is then refused as a bad request.
		expect((await attempt(key)).status).toBe(400);
	});

	it("initialize beyond a key's live-session cap gets 429 with a clear sentence; ending a session frees its place", async () => {
		const server = await registerServer("beta");
		const path = `/mcp/${server}`;
		const created = await admin("POST", "/keys", { maxSessions: 2 });
		const { key } = (await created.json()) as { key: string };
		const first = await openSession(path, key);
		await openSession(path, key);
		const refused = await postInitialize(path, key);
		expect(refused.status).toBe(429);
		expect(refused.headers.get("mcp-session-id")).toBeNull();
		const { kind, message } = await errorOf(refused);
		expect(kind).toBe("session_limit");
		expect(message).toContain("limit of 2 live sessions");
		const deleted = await gatewayFetch(path, { method: "DELETE", headers: mcpHeaders(key, first) });
		expect(deleted.status).toBe(204);
		await expect(openSession(path, key)).resolves.toMatch(/^gw1\./);
	});

	it("an initialize that does not open a session takes no place", async () => {
		const unreachable = uniqueName("down");
		await admin("PUT", `/servers/${unreachable}`, { url: "http://127.0.0.1:9/mcp" });
		const server = await registerServer("beta");
		const created = await admin("POST", "/keys", { maxSessions: 1 });
		const { key } = (await created.json()) as { key: string };
		for (let i = 0; i < 3; i++) {
			const failed = await postInitialize(`/mcp/${unreachable}`, key);
			expect(failed.headers.get("mcp-session-id")).toBeNull();
			expect((await readReply(failed)).error?.data?.kind).toBe("upstream_unavailable");
		}
		await expect(openSession(`/mcp/${server}`, key)).resolves.toMatch(/^gw1\./);
	});
});
