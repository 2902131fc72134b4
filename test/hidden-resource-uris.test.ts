import { describe, expect, it } from "vitest";
import { admin, createKey, openSession, type RpcReply, readReply, rpc, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";
import { eventReader } from "./support/sse-events.ts";
import { type UpstreamLogEntry, type UpstreamName, upstreamLog, upstreamUrl } from "./support/upstreams.ts";

/**
 * A hidden resource is hidden however its URI is spelled (issue 33, point 2):
 * the operator's `resources` globs decide on the URI in RFC 3986 normal form,
 * as the upstream reads it, on `/mcp/<server>` in both eras, for reads,
 * subscriptions, templates and completions; what the gateway cannot normalise
 * is refused with -32602; a visible resource goes upstream as the client spelled it.
 * Real upstreams: delta (2025, the demo catalog with `demo://delta/readme`, the
 * `demo://delta/notes/{id}` template, and resource subscriptions) and modern
 * (2026-07-28 only, with `demo://modern/readme`).
 */

/** Hides the readme and every note, as the operator did. */
function hiding(host: string) {
	return { resources: { exclude: [`demo://${host}/readme`, `demo://${host}/notes/*`] } };
}

/** The six spellings of the hidden resources, for the upstream whose URIs have this host. */
function spellings(host: string): string[] {
	return [
		`DEMO://${host}/readme`,
		`Demo://${host}/readme`,
		`demo://${host}/x/../readme`,
		`demo://${host}/./readme`,
		`DEMO://${host}/notes/1`,
		`demo://${host}/a/../notes/1`,
	];
}

async function server(upstream: UpstreamName, shaping: Record<string, unknown>): Promise<string> {
	const name = uniqueName("spelled");
	const response = await admin("PUT", `/servers/${name}`, { url: upstreamUrl(upstream), ...shaping });
	if (response.status !== 201) throw new Error(`server: ${await response.text()}`);
	return name;
}

type Call = (method: string, params: Record<string, unknown>) => Promise<RpcReply>;

/** A 2025 client: a session opened with raw fetch, each request's JSON-RPC reply read whole. */
async function legacyClient(path: string, key: string): Promise<Call> {
	const sessionId = await openSession(path, key);
	let id = 0;
	return async (method, params) =>
		readReply(await rpc(path, key, sessionId, { jsonrpc: "2.0", id: ++id, method, params }));
}

/** A 2026-07-28 client: each request stands alone, with its envelope. */
async function modernClient(path: string, key: string): Promise<Call> {
	let id = 0;
	return async (method, params) =>
		readReply(await modernPost(path, key, { id: ++id, method, params: { ...params, _meta: ENVELOPE } }));
}

/** Each era's client, and its code for an unknown resource (2026-07-28 made it -32602). */
const ERAS = [
	{
		era: "a 2025 client",
		client: legacyClient,
		notFound: -32002,
		uriMethods: ["resources/read", "resources/subscribe"],
	},
	// 2026-07-28 removed resources/subscribe; a listen's filter is judged as a read is.
	{ era: "a 2026-07-28 client", client: modernClient, notFound: -32602, uriMethods: ["resources/read"] },
] as const;

/** The upstream's requests, from the whole log of the run, whose params mention `text` anywhere. */
function mentioning(log: readonly UpstreamLogEntry[], text: string): UpstreamLogEntry[] {
	return log.filter((entry) => JSON.stringify(entry.body?.params ?? {}).includes(text));
}

/** The unknown resource's refusal, as the gateway gives it for `uri` (`code`: the era's). */
function unknownResourceError(uri: string, code: number) {
	return {
		code,
		message: `Resource not found: ${uri} is not offered by this endpoint.`,
		data: { kind: "resource_not_found" },
	};
}

describe.each([
	{ upstream: "delta", host: "delta" },
	{ upstream: "modern", host: "modern" },
] as const)("on /mcp/<server> of the $upstream upstream, resources hidden by the operator", ({ upstream, host }) => {
	describe.each(ERAS)("$era", ({ client, notFound }) => {
		it("are refused exactly as the canonical hidden URI is, in each of the issue's six spellings, and none reaches the upstream", async () => {
			const name = await server(upstream, hiding(host));
			const key = await createKey({ servers: [name] });
			const call = await client(`/mcp/${name}`, key.key);
			const readme = `demo://${host}/readme`;
			const canonical = await call("resources/read", { uri: readme });
			expect(canonical.error).toMatchObject(unknownResourceError(readme, notFound));
			for (const uri of spellings(host)) {
				const refused = await call("resources/read", { uri });
				expect(refused.result).toBeUndefined();
				// The same error, word for word, naming the URI as the client gave it.
				expect(refused.error).toEqual(JSON.parse(JSON.stringify(canonical.error).replaceAll(readme, uri)));
			}
			const log = await upstreamLog(upstream);
			for (const uri of spellings(host)) expect(mentioning(log, uri)).toEqual([]);
		});
	});
});

describe.each(ERAS)("on /mcp/<server>, $era", ({ client, notFound, uriMethods }) => {
	it("a visible resource read under an odd spelling is served, and reaches the upstream spelled as the client spelled it", async () => {
		const name = await server("delta", { resources: { exclude: ["demo://delta/notes/secret-*"] } });
		const key = await createKey({ servers: [name] });
		const call = await client(`/mcp/${name}`, key.key);
		const marker = uniqueName("open");
		const uri = `DEMO://delta/x/../notes/./open-${marker}`;
		const read = await call("resources/read", { uri });
		expect(read.error).toBeUndefined();
		// The upstream read it as `demo://delta/notes/open-…`, and says so.
		expect(read.result?.contents).toEqual([{ uri: `demo://delta/notes/open-${marker}`, text: `note open-${marker}` }]);
		const sent = mentioning(await upstreamLog("delta"), marker).filter(
			(entry) => entry.body?.method === "resources/read",
		);
		expect(sent.map((entry) => entry.body?.params?.uri)).toEqual([uri]);
	});

	it("a URI the gateway cannot normalise is refused with -32602 and a sentence saying why, and does not reach the upstream", async () => {
		const name = await server("delta", hiding("delta"));
		const key = await createKey({ servers: [name] });
		const call = await client(`/mcp/${name}`, key.key);
		const marker = uniqueName("odd");
		const cases = [
			[`demo://delta/${marker}/%zz`, 'has a "%" that is not followed by two hexadecimal digits'],
			[`delta/${marker}/readme`, 'has no scheme (such as "https:" or "file:"), so it is not an absolute URI'],
			[`demo://delta/${marker}\\..\\readme`, 'contains a backslash, which some servers read as "/"'],
		];
		for (const [uri, reason] of cases) {
			for (const method of uriMethods) {
				const refused = await call(method, { uri });
				expect(refused.error?.code).toBe(-32602);
				expect(refused.error?.message).toBe(
					`Invalid params: the resource URI ${JSON.stringify(uri)} ${reason}; the gateway cannot compare it with the resources this endpoint offers.`,
				);
			}
		}
		expect(mentioning(await upstreamLog("delta"), marker)).toEqual([]);
	});

	it("templates hidden by a glob spelled oddly are not listed, and reads of their URIs in any spelling are refused", async () => {
		// The operator's glob, spelled oddly too: it is compared in normal form, `demo://delta/notes/*`.
		const name = await server("delta", { resources: { exclude: ["DEMO://Delta/a/../%6Eotes/*"] } });
		const key = await createKey({ servers: [name] });
		const call = await client(`/mcp/${name}`, key.key);
		const listed = await call("resources/templates/list", {});
		expect(listed.result?.resourceTemplates).toEqual([]);
		const resources = (await call("resources/list", {})).result?.resources as Array<{ uri: string }>;
		expect(resources.map((resource) => resource.uri)).toEqual(["demo://delta/readme"]);
		const marker = uniqueName("note");
		for (const uri of [
			`demo://delta/notes/${marker}`,
			`DEMO://delta/notes/${marker}`,
			`demo://delta/a/../notes/${marker}`,
		]) {
			expect((await call("resources/read", { uri })).error).toMatchObject(unknownResourceError(uri, notFound));
		}
		expect(mentioning(await upstreamLog("delta"), marker)).toEqual([]);
	});

	it("a completion of a hidden template, its URI spelled oddly, is refused as an unknown resource and does not reach the upstream", async () => {
		const name = await server("delta", hiding("delta"));
		const key = await createKey({ servers: [name] });
		const call = await client(`/mcp/${name}`, key.key);
		const marker = uniqueName("partial");
		for (const uri of ["DEMO://delta/notes/{id}", "demo://delta/a/../notes/{id}", "demo://Delta/notes/{id}"]) {
			const refused = await call("completion/complete", {
				ref: { type: "ref/resource", uri },
				argument: { name: "id", value: marker },
			});
			expect(refused.error).toMatchObject(unknownResourceError(uri, notFound));
		}
		expect(mentioning(await upstreamLog("delta"), marker)).toEqual([]);
	});
});

describe("subscriptions to hidden resources, however spelled", () => {
	it("a 2025 client's resources/subscribe and unsubscribe of each spelling are refused as unknown and never reach the upstream; a visible one does", async () => {
		const name = await server("delta", hiding("delta"));
		const key = await createKey({ servers: [name] });
		const call = await legacyClient(`/mcp/${name}`, key.key);
		for (const uri of spellings("delta")) {
			for (const method of ["resources/subscribe", "resources/unsubscribe"]) {
				expect((await call(method, { uri })).error).toMatchObject(unknownResourceError(uri, -32002));
			}
		}
		const watched = `demo://delta/watched/${uniqueName("visible")}`;
		expect((await call("resources/subscribe", { uri: watched })).error).toBeUndefined();
		const log = await upstreamLog("delta");
		for (const uri of spellings("delta")) expect(mentioning(log, uri)).toEqual([]);
		expect(mentioning(log, watched).map((entry) => entry.body?.method)).toEqual(["resources/subscribe"]);
	});

	it("a 2026-07-28 client's subscriptions/listen naming each spelling subscribes the upstream to none of them, and to the visible one", async () => {
		const name = await server("delta", hiding("delta"));
		const key = await createKey({ servers: [name] });
		const watched = `demo://delta/watched/${uniqueName("visible")}`;
		const listen = await modernPost(`/mcp/${name}`, key.key, {
			id: "listen-1",
			method: "subscriptions/listen",
			params: { _meta: ENVELOPE, notifications: { resourceSubscriptions: [...spellings("delta"), watched] } },
		});
		expect(listen.status).toBe(200);
		const stream = eventReader(listen.body as ReadableStream<Uint8Array>);
		// Acknowledged once the session has asked the upstream for each subscription it allows.
		expect((await stream.next()).method).toBe("notifications/subscriptions/acknowledged");
		await stream.cancel();
		const log = await upstreamLog("delta");
		for (const uri of spellings("delta")) expect(mentioning(log, uri)).toEqual([]);
		expect(mentioning(log, watched).map((entry) => entry.body?.method)).toEqual(["resources/subscribe"]);
	});
});

describe("the aggregate /mcp still routes resource URIs by what its members listed", () => {
	it("a member's hidden resource, in each of the issue's six spellings, is an unknown resource on /mcp and never reaches the upstream", async () => {
		const name = await server("delta", hiding("delta"));
		const key = await createKey({ servers: [name] });
		for (const { client, notFound } of ERAS) {
			const call = await client("/mcp", key.key);
			for (const uri of spellings("delta")) {
				expect((await call("resources/read", { uri })).error).toMatchObject(unknownResourceError(uri, notFound));
			}
		}
		const log = await upstreamLog("delta");
		for (const uri of spellings("delta")) expect(mentioning(log, uri)).toEqual([]);
	});
});

describe("the operator's resource globs", () => {
	it("a glob the gateway cannot normalise is refused at PUT, saying why, and nothing is made", async () => {
		for (const [glob, reason] of [
			["demo://delta/%zz/*", 'has a "%" that is not followed by two hexadecimal digits'],
			["file:///pub\\*", 'contains a backslash, which some servers read as "/"'],
		] as const) {
			const name = uniqueName("badglob");
			const response = await admin("PUT", `/servers/${name}`, {
				url: upstreamUrl("delta"),
				resources: { exclude: [glob] },
			});
			expect(response.status).toBe(400);
			const { error } = (await response.json()) as { error: { message: string } };
			expect(error.message).toBe(
				`Bad Request: resources.exclude.0: must be a glob of a resource URI, but it ${reason}.`,
			);
			expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
		}
	});

	it("a glob is kept as the operator wrote it: GET answers it unchanged", async () => {
		const name = await server("delta", { resources: { exclude: ["DEMO://Delta/a/../%6Eotes/*"] } });
		const record = (await (await admin("GET", `/servers/${name}`)).json()) as { resources?: unknown };
		expect(record.resources).toEqual({ exclude: ["DEMO://Delta/a/../%6Eotes/*"] });
	});
});
