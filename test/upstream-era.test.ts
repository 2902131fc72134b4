import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ModernRecordedRequest } from "../scripts/fixtures/control-shapes.ts";
import { GatewayError } from "../src/mcp/gateway-error.ts";
import { sha256Hex } from "../src/primitives/crypto.ts";
import { configDigest } from "../src/registry/config-digest.ts";
import { REGISTRY_NAME } from "../src/registry/registry-do.ts";
import { MemberSchema, memberOf } from "../src/session/binding.ts";
import type { FetchLike } from "../src/upstream/upstream-connection.ts";
import { EraCache, type EraServer, upstreamEra } from "../src/upstream/upstream-era.ts";
import type { UpstreamTarget } from "../src/upstream/upstream-target.ts";
import { admin, uniqueName } from "./support/gateway.ts";
import { hostileUrl } from "./support/hostile.ts";
import { upstreamUrl } from "./support/upstreams.ts";

/** One request as the modern fixture logged it, its body in the shape these tests read. */
interface ModernLogEntry extends Omit<ModernRecordedRequest, "body"> {
	body: { method?: string; params?: { _meta?: Record<string, unknown> } } | undefined;
}

/** An address nothing listens on (the discard port): connecting fails at once. */
const UNREACHABLE_URL = "http://127.0.0.1:9/mcp";

function target(url: string, headers: Record<string, string> = {}): UpstreamTarget {
	return { name: uniqueName("era"), url, headers, timeoutMs: 5_000, maxReplyBytes: 1024 * 1024 };
}

/** A server of its own (fresh name), so no other test's answer is in the way. */
function server(overrides: Partial<EraServer> = {}): EraServer {
	return { name: uniqueName("srv"), generation: "gen-1", configDigest: "digest-1", ...overrides };
}

/** A fetch that counts the requests it sends. */
function countingFetch(): { fetcher: FetchLike; readonly count: number } {
	let count = 0;
	return {
		fetcher: (input, init) => {
			count++;
			return fetch(input, init);
		},
		get count() {
			return count;
		},
	};
}

async function modernLog(which: "modern" | "dual"): Promise<ModernLogEntry[]> {
	const response = await fetch(`${new URL(upstreamUrl(which)).origin}/_log`);
	return (await response.json()) as ModernLogEntry[];
}

async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
	const error = await promise.then(
		() => null,
		(caught: unknown) => caught,
	);
	if (!(error instanceof GatewayError)) throw new Error(`expected a GatewayError, got ${String(error)}`);
	return error;
}

describe("an upstream's era is discovered with one server/discover", () => {
	it("a modern-only upstream and a dual-era one (SSE replies) are modern; a 2025 upstream (SDK v1) is legacy", async () => {
		const cache = new EraCache();
		expect(await upstreamEra(target(upstreamUrl("modern")), server(), { cache })).toBe("modern");
		expect(await upstreamEra(target(upstreamUrl("dual")), server(), { cache })).toBe("modern");
		expect(await upstreamEra(target(upstreamUrl("beta")), server(), { cache })).toBe("legacy");
		const alpha = target(upstreamUrl("alpha"), { Authorization: "Bearer alpha-secret" });
		expect(await upstreamEra(alpha, server(), { cache })).toBe("legacy");
	});

	it("the probe is a modern request: the envelope names the gateway with empty capabilities, the standard headers are set, and the server's configured headers are sent", async () => {
		const tag = uniqueName("probe");
		await upstreamEra(target(upstreamUrl("modern"), { "X-Probe": tag }), server(), { cache: new EraCache() });
		const probes = (await modernLog("modern")).filter((entry) => entry.headers["x-probe"] === tag);
		expect(probes).toHaveLength(1);
		const [probe] = probes;
		expect(probe?.method).toBe("POST");
		expect(probe?.headers).toMatchObject({
			"mcp-protocol-version": "2026-07-28",
			"mcp-method": "server/discover",
			accept: "application/json, text/event-stream",
			"content-type": "application/json",
		});
		expect(probe?.body?.method).toBe("server/discover");
		expect(probe?.body?.params?._meta).toEqual({
			"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientInfo": { name: "mcp-edge-gateway", version: "0.1.0" },
			"io.modelcontextprotocol/clientCapabilities": {},
		});
	});

	it("a -32022 that lists only 2025 versions is legacy, and so is a JSON-RPC error answered with HTTP 200", async () => {
		const cache = new EraCache();
		const tag = uniqueName("tag");
		expect(await upstreamEra(target(hostileUrl("legacy-versions", tag)), server(), { cache })).toBe("legacy");
		expect(await upstreamEra(target(hostileUrl("sink", tag)), server(), { cache })).toBe("legacy");
	});

	it("an auth wall says nothing of the era: it throws upstream_auth_required and is not remembered", async () => {
		const cache = new EraCache();
		const counter = countingFetch();
		const alpha = server();
		const walled = await refusal(upstreamEra(target(upstreamUrl("alpha")), alpha, { cache, fetcher: counter.fetcher }));
		expect(walled.kind).toBe("upstream_auth_required");
		expect(walled.message).toMatch(/rejected the gateway's credentials \(HTTP 401\) for server\/discover/);
		const withToken = target(upstreamUrl("alpha"), { Authorization: "Bearer alpha-secret" });
		expect(await upstreamEra(withToken, alpha, { cache, fetcher: counter.fetcher })).toBe("legacy");
		expect(counter.count).toBe(2);
	});

	it("a redirect is not followed and says nothing of the era", async () => {
		const redirect = target(hostileUrl("redirect", uniqueName("tag"), { to: upstreamUrl("modern") }));
		const refused = await refusal(upstreamEra(redirect, server(), { cache: new EraCache() }));
		expect(refused.kind).toBe("upstream_error");
		expect(refused.message).toMatch(/redirect/);
	});
});

describe("the operator's line says what the probe learned", () => {
	afterEach(() => {
		vi.restoreAllMocks();
	});

	/** The lines logged from now on that name `probed` (other tests log beside it). */
	function linesNaming(probed: UpstreamTarget): string[] {
		const lines: string[] = [];
		vi.spyOn(console, "log").mockImplementation((line: unknown) => {
			if (String(line).includes(`upstream ${probed.name}:`)) lines.push(String(line));
		});
		return lines;
	}

	it("a 2025 server's refusal of server/discover is told as the 2025 answer it is, not as a failure", async () => {
		const legacy = target(upstreamUrl("beta"));
		const lines = linesNaming(legacy);
		await upstreamEra(legacy, server(), { cache: new EraCache() });
		expect(lines).toHaveLength(1);
		expect(lines[0]).toContain(
			`upstream ${legacy.name}: speaks MCP 2025, the gateway opens 2025 sessions with it (initialize); it refused server/discover, as 2025 servers do (HTTP 4`,
		);
	});

	it("a 2026-07-28 server's line names the version and the versions it listed", async () => {
		const modern = target(upstreamUrl("modern"));
		const lines = linesNaming(modern);
		await upstreamEra(modern, server(), { cache: new EraCache() });
		expect(lines).toHaveLength(1);
		expect(lines[0]).toMatch(/speaks MCP 2026-07-28 \(server\/discover: HTTP 200, supported versions [^)]*2026-07-28/);
	});
});

describe("a pinned protocol is believed without a request", () => {
	it("2026-07-28 answers modern and 2025-11-25 legacy, and the upstream is never asked", async () => {
		const counter = countingFetch();
		const options = { cache: new EraCache(), fetcher: counter.fetcher };
		// Pinned against what the upstreams would say: the operator's word wins.
		const legacyUpstream = target(upstreamUrl("beta"));
		const modernUpstream = target(upstreamUrl("modern"));
		expect(await upstreamEra(legacyUpstream, server({ protocol: "2026-07-28" }), options)).toBe("modern");
		expect(await upstreamEra(modernUpstream, server({ protocol: "2025-11-25" }), options)).toBe("legacy");
		expect(counter.count).toBe(0);
		expect(options.cache.size).toBe(0);
	});
});

describe("answers are kept per isolate, by name, generation and config digest", () => {
	it("eight concurrent lookups of one server share one probe, and a later lookup asks nobody", async () => {
		const counter = countingFetch();
		const cache = new EraCache();
		const one = server();
		const modern = target(upstreamUrl("modern"));
		const eras = await Promise.all(
			Array.from({ length: 8 }, () => upstreamEra(modern, one, { cache, fetcher: counter.fetcher })),
		);
		expect(eras).toEqual(Array(8).fill("modern"));
		expect(counter.count).toBe(1);
		expect(await upstreamEra(modern, one, { cache, fetcher: counter.fetcher })).toBe("modern");
		expect(counter.count).toBe(1);
	});

	it("a new generation, or a new config digest, is asked again", async () => {
		const counter = countingFetch();
		const options = { cache: new EraCache(), fetcher: counter.fetcher };
		const modern = target(upstreamUrl("modern"));
		const first = server();
		await upstreamEra(modern, first, options);
		await upstreamEra(modern, { ...first, generation: "gen-2" }, options);
		expect(counter.count).toBe(2);
		await upstreamEra(modern, { ...first, generation: "gen-2", configDigest: "digest-2" }, options);
		expect(counter.count).toBe(3);
		await upstreamEra(modern, { ...first, generation: "gen-2", configDigest: "digest-2" }, options);
		expect(counter.count).toBe(3);
	});

	it("an answer is believed for its TTL, then asked again", async () => {
		let now = 1_000_000;
		const counter = countingFetch();
		const cache = new EraCache({ ttlMs: 60_000, now: () => now });
		const modern = target(upstreamUrl("modern"));
		const one = server();
		await upstreamEra(modern, one, { cache, fetcher: counter.fetcher });
		now += 59_999;
		await upstreamEra(modern, one, { cache, fetcher: counter.fetcher });
		expect(counter.count).toBe(1);
		now += 1;
		await upstreamEra(modern, one, { cache, fetcher: counter.fetcher });
		expect(counter.count).toBe(2);
	});

	it("the cache is bounded: past its size the oldest answer leaves first", async () => {
		const counter = countingFetch();
		const cache = new EraCache({ maxEntries: 2 });
		const modern = target(upstreamUrl("modern"));
		const [first, second, third] = [server(), server(), server()];
		for (const each of [first, second, third]) await upstreamEra(modern, each, { cache, fetcher: counter.fetcher });
		expect(cache.size).toBe(2);
		await upstreamEra(modern, third, { cache, fetcher: counter.fetcher });
		expect(counter.count).toBe(3);
		await upstreamEra(modern, first, { cache, fetcher: counter.fetcher });
		expect(counter.count).toBe(4);
	});

	it("a probe that outlasts the server's timeout throws upstream_timeout, and nothing is remembered", async () => {
		const counter = countingFetch();
		const cache = new EraCache();
		const one = server();
		const held = { ...target(hostileUrl("held-discover", uniqueName("tag"))), timeoutMs: 300 };
		const late = await refusal(upstreamEra(held, one, { cache, fetcher: counter.fetcher }));
		expect(late.kind).toBe("upstream_timeout");
		expect(cache.size).toBe(0);
		expect(await upstreamEra(target(upstreamUrl("modern")), one, { cache, fetcher: counter.fetcher })).toBe("modern");
		expect(counter.count).toBe(2);
	});

	it("an unreachable upstream throws upstream_unavailable and nothing is remembered: the next lookup probes again", async () => {
		const counter = countingFetch();
		const cache = new EraCache();
		const one = server();
		const down = await refusal(upstreamEra(target(UNREACHABLE_URL), one, { cache, fetcher: counter.fetcher }));
		expect(down.kind).toBe("upstream_unavailable");
		expect(down.message).not.toContain("127.0.0.1");
		expect(cache.size).toBe(0);
		expect(await upstreamEra(target(upstreamUrl("modern")), one, { cache, fetcher: counter.fetcher })).toBe("modern");
		expect(counter.count).toBe(2);
	});
});

describe("the admin API carries a server's protocol", () => {
	const registry = () => env.REGISTRY.get(env.REGISTRY.idFromName(REGISTRY_NAME));

	it("PUT stores it (auto by default); GET, the listing and the published KV record show it", async () => {
		const name = uniqueName("proto");
		const created = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("modern") });
		expect(created.status).toBe(201);
		expect(await created.json()).toMatchObject({ protocol: "auto" });
		const pinned = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("modern"), protocol: "2026-07-28" });
		expect(pinned.status).toBe(200);
		expect(await pinned.json()).toMatchObject({ protocol: "2026-07-28" });
		expect(await (await admin("GET", `/servers/${name}`)).json()).toMatchObject({ protocol: "2026-07-28" });
		const { servers } = (await (await admin("GET", "/servers")).json()) as {
			servers: Array<{ name: string; protocol: string }>;
		};
		expect(servers.find((each) => each.name === name)?.protocol).toBe("2026-07-28");
		expect(await env.REGISTRY_KV.get(`endpoint/${name}`, "json")).toMatchObject({
			kind: "server",
			server: { name, protocol: "2026-07-28" },
		});
	});

	it("a protocol other than auto, 2025-11-25 or 2026-07-28 is a 400 naming the field, and changes nothing", async () => {
		const name = uniqueName("proto");
		await admin("PUT", `/servers/${name}`, { url: upstreamUrl("modern"), protocol: "2025-11-25" });
		for (const protocol of ["2025-06-18", "modern", 2026, null]) {
			const refused = await admin("PUT", `/servers/${name}`, { url: upstreamUrl("modern"), protocol });
			expect(refused.status).toBe(400);
			const { error } = (await refused.json()) as { error: { message: string } };
			expect(error.message).toBe('Bad Request: protocol: must be one of "auto", "2025-11-25", "2026-07-28".');
		}
		expect(await (await admin("GET", `/servers/${name}`)).json()).toMatchObject({ protocol: "2025-11-25" });
	});

	it("changing the protocol changes the config digest; back on auto it is the digest the server had before the field existed", async () => {
		const name = uniqueName("proto");
		const url = upstreamUrl("modern");
		await admin("PUT", `/servers/${name}`, { url });
		const auto = await registry().getServer(name);
		await admin("PUT", `/servers/${name}`, { url, protocol: "2026-07-28" });
		const pinned = await registry().getServer(name);
		expect(pinned?.generation).toBe(auto?.generation);
		expect(pinned?.configDigest).not.toBe(auto?.configDigest);
		await admin("PUT", `/servers/${name}`, { url, protocol: "2025-11-25" });
		expect((await registry().getServer(name))?.configDigest).not.toBe(pinned?.configDigest);
		await admin("PUT", `/servers/${name}`, { url, protocol: "auto" });
		const back = await registry().getServer(name);
		expect(back?.configDigest).toBe(auto?.configDigest);
		expect(back?.configDigest).toBe(await sha256Hex(JSON.stringify([url, {}, null])));
		expect(await configDigest({ url, headers: {}, timeoutSeconds: null, protocol: "auto" })).toBe(back?.configDigest);
	});

	it("a session's member snapshot carries the protocol, and a member stored before it existed still parses (as auto)", async () => {
		const name = uniqueName("proto");
		await admin("PUT", `/servers/${name}`, { url: upstreamUrl("dual"), protocol: "2025-11-25" });
		const record = await registry().getServer(name);
		if (!record) throw new Error(`server ${name} was not stored`);
		expect(memberOf(record).protocol).toBe("2025-11-25");
		const older = MemberSchema.parse({ name, url: record.url, headers: {}, timeoutSeconds: null, generation: "g" });
		expect(older.protocol).toBeUndefined();
		// Absent means auto: the era is discovered.
		expect(await upstreamEra(target(upstreamUrl("dual")), older, { cache: new EraCache() })).toBe("modern");
	});
});
