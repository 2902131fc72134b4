import { env } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, inject, it } from "vitest";
import { Browser } from "../scripts/fixtures/browser.ts";
import type { OAuthUpstreamStats, RecordedRestRequest } from "../scripts/fixtures/control-shapes.ts";
import { restRecorderDocument } from "../scripts/fixtures/rest-recorder-document.ts";
import { discoverUpstreamAuthorization } from "../src/credentials/upstream-discovery.ts";
import { registryStub } from "../src/registry/registry-stub.ts";
import { admin, BASE, connectClient, createKey, postInitialize, readReply, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost } from "./support/modern.ts";

/**
 * Servers made from the REST recorder's document (scripts/fixtures/rest-recorder.ts):
 * every request a call becomes is recorded exactly as it arrived, so each test
 * reads what the API saw. The recorder is shared: a test finds its own requests
 * by the header its server sends (`X-Test-Run`).
 */

const RECORDER = `http://127.0.0.1:${inject("restRecorderPort")}`;
/** The OAuth fixture's authorization server, where people sign in for the oauth tests. */
const PEOPLE_AS = `http://127.0.0.1:${inject("peopleUpstreamPort")}`;

const clients: Client[] = [];
afterEach(async () => {
	await Promise.all(clients.splice(0).map((client) => client.close()));
});

/** A server made from the recorder's document, fetched from its URL; its requests carry `X-Test-Run: <run>`. */
async function registerRecorder(fields: Record<string, unknown> = {}) {
	const name = uniqueName("rest");
	const run = uniqueName("run");
	const response = await admin("PUT", `/servers/${name}?check=false`, {
		openapi: { url: `${RECORDER}/openapi.json` },
		headers: { "X-Test-Run": run },
		...fields,
	});
	expect(response.status, await response.clone().text()).toBe(201);
	return { name, run, shown: (await response.json()) as Record<string, unknown> };
}

/** Every request the recorder saw from the run `run`. */
async function recorded(run: string): Promise<RecordedRestRequest[]> {
	const log = (await (await fetch(`${RECORDER}/__log`)).json()) as RecordedRestRequest[];
	return log.filter((request) => request.headers["x-test-run"] === run);
}

async function clientFor(name: string): Promise<{ client: Client; key: string }> {
	const { key } = await createKey({ servers: [name] });
	const { client } = await connectClient(`/mcp/${name}`, key);
	clients.push(client);
	return { client, key };
}

function textOf(result: Record<string, unknown>): string {
	return ((result.content as Array<{ type: string; text?: string }> | undefined) ?? [])
		.map((block) => block.text ?? "")
		.join("");
}

describe("a server made from a REST API's document", () => {
	it("registered by its document's URL, fetched at PUT: it shows where the document is and how many tools it gave", async () => {
		const { shown } = await registerRecorder();
		expect(shown).toMatchObject({ openapi: { url: `${RECORDER}/openapi.json`, credentials: {} } });
		expect(shown).not.toHaveProperty("url");
		expect((shown.openapi as { tools: number }).tools).toBeGreaterThan(10);
		expect(shown.notes).toEqual(expect.any(Array));
	});

	it("a call with path, query and body parameters reaches the API exactly as the document says", async () => {
		const { name, run } = await registerRecorder();
		const { client } = await clientFor(name);
		const listed = await client.callTool({
			name: "listItems",
			arguments: { tags: ["a", "b"], ids: [1, 2], filter: { colour: "red" }, limit: 5 },
		});
		expect(listed.isError).toBeFalsy();
		expect(listed.structuredContent).toEqual({ result: expect.any(Array) });
		const updated = await client.callTool({
			name: "updateItem",
			arguments: { itemId: "item 7", body: { id: "ignored", name: "seven", tags: ["x"] } },
		});
		expect(updated.structuredContent).toEqual({ id: "item 7", name: "seven", tags: ["x"] });
		const [list, put] = await recorded(run);
		expect(list?.method).toBe("GET");
		expect(list?.target).toBe("/items?tags=a&tags=b&ids=1,2&filter%5Bcolour%5D=red&limit=5");
		expect(list?.headers.accept).toMatch(/^application\/json/);
		expect(put?.method).toBe("PUT");
		expect(put?.target).toBe("/items/item%207");
		expect(put?.headers["content-type"]).toMatch(/^application\/json/);
		expect(JSON.parse(put?.body ?? "")).toEqual({ id: "ignored", name: "seven", tags: ["x"] });
	});

	it("a path value '../admin' or '%2F' stays inside its segment: the API sees one item, and no request leaves /items", async () => {
		const { name, run } = await registerRecorder();
		const { client } = await clientFor(name);
		const climbed = await client.callTool({ name: "getItem", arguments: { itemId: "../admin" } });
		expect(climbed.structuredContent).toMatchObject({ id: "../admin" });
		const encoded = await client.callTool({ name: "getItem", arguments: { itemId: "a%2Fb" } });
		expect(encoded.structuredContent).toMatchObject({ id: "a%2Fb" });
		const targets = (await recorded(run)).map((request) => request.target);
		expect(targets).toEqual(["/items/..%2Fadmin", "/items/a%252Fb"]);
		expect(targets.every((target) => target.startsWith("/items/") && target.split("/").length === 3)).toBe(true);
	});

	it("a 404 and a 500 from the API become isError results with the status and an excerpt of the body", async () => {
		const { name } = await registerRecorder();
		const { client } = await clientFor(name);
		const missing = await client.callTool({ name: "getMissing", arguments: {} });
		expect(missing.isError).toBe(true);
		expect(textOf(missing)).toMatch(/^HTTP 404 Not Found/);
		expect(textOf(missing)).toContain("no such thing");
		const broken = await client.callTool({ name: "getBroken", arguments: {} });
		expect(broken.isError).toBe(true);
		expect(textOf(broken)).toMatch(/^HTTP 500 Internal Server Error/);
		expect(textOf(broken).length).toBeLessThan(2_200);
	});

	it("the server's headers reach the API and the client's API key reaches it nowhere", async () => {
		const { name, run } = await registerRecorder();
		const { client, key } = await clientFor(name);
		await client.callTool({ name: "getPublic", arguments: {} });
		await client.callTool({ name: "getItem", arguments: { itemId: "1" } });
		const requests = await recorded(run);
		expect(requests).toHaveLength(2);
		const everything = JSON.stringify(requests);
		expect(everything).not.toContain(key);
		expect(requests.every((request) => request.headers.authorization === undefined)).toBe(true);
	});

	it("the operator's credentials go where the document's schemes say: an API key in the query, Basic in Authorization", async () => {
		const { name, run } = await registerRecorder({
			openapi: {
				url: `${RECORDER}/openapi.json`,
				credentials: { queryKey: "${UPSTREAM_PETSTORE_KEY}", basicAuth: "ada:lovelace" },
			},
		});
		const { client } = await clientFor(name);
		expect((await client.callTool({ name: "secureQuery", arguments: {} })).isError).toBeFalsy();
		expect((await client.callTool({ name: "secureBasic", arguments: {} })).isError).toBeFalsy();
		const [query, basic] = await recorded(run);
		expect(query?.target).toBe("/secure/query?api_key=special-key");
		expect(basic?.headers.authorization).toBe(`Basic ${btoa("ada:lovelace")}`);
		const shown = (await (await admin("GET", `/servers/${name}`)).json()) as { openapi: { credentials: unknown } };
		expect(shown.openapi.credentials).toEqual({ queryKey: "${UPSTREAM_PETSTORE_KEY}", basicAuth: "***" });
	});

	it("both eras call it on /mcp/<server> and on /mcp", async () => {
		const { name, run } = await registerRecorder();
		const { key } = await createKey({ servers: [name] });
		const { client: aggregate } = await connectClient("/mcp", key);
		clients.push(aggregate);
		expect(
			(await aggregate.callTool({ name: `${name}__getItem`, arguments: { itemId: "agg" } })).structuredContent,
		).toMatchObject({ id: "agg" });
		for (const [path, tool, id] of [
			[`/mcp/${name}`, "getItem", "modern-own"],
			["/mcp", `${name}__getItem`, "modern-agg"],
		] as const) {
			const body = { id: 1, method: "tools/call", params: { name: tool, arguments: { itemId: id }, _meta: ENVELOPE } };
			const reply = await readReply(await modernPost(path, key, body));
			expect(reply.result?.structuredContent, path).toMatchObject({ id });
		}
		expect((await recorded(run)).map((request) => request.target)).toEqual([
			"/items/agg",
			"/items/modern-own",
			"/items/modern-agg",
		]);
	});

	it("a changed document is a changed server: under pinning 'block' a tool whose definition changed is held", async () => {
		const name = uniqueName("pinned-rest");
		const document = restRecorderDocument(RECORDER);
		const put = (doc: Record<string, unknown>) =>
			admin("PUT", `/servers/${name}?check=false`, { openapi: { document: doc }, pinning: "block" });
		expect((await put(document)).status).toBe(201);
		expect((await admin("POST", `/servers/${name}/tools/approve`, {})).status).toBe(200);
		const changed = structuredClone(document) as { paths: Record<string, Record<string, { summary?: string }>> };
		const getItem = changed.paths["/items/{itemId}"]?.get;
		if (getItem) getItem.summary = "Get an item, and something else now";
		expect((await put(changed)).status).toBe(200);
		const view = (await (await admin("GET", `/servers/${name}/tools`)).json()) as {
			tools: Array<{ name: string; state: string }>;
		};
		expect(view.tools.find((tool) => tool.name === "getItem")?.state).toBe("changed");
		const { client } = await clientFor(name);
		const names = (await client.listTools()).tools.map((tool) => tool.name);
		expect(names).not.toContain("getItem");
		expect(names).toContain("listItems");
	});

	it("a document that does not load is refused with its problem and where, and nothing is registered", async () => {
		const name = uniqueName("bad-doc");
		const document = restRecorderDocument(RECORDER) as { paths: Record<string, unknown> };
		document.paths["/elsewhere"] = { $ref: "https://example.com/other.yaml#/paths/~1x" };
		const response = await admin("PUT", `/servers/${name}`, { openapi: { document } });
		expect(response.status).toBe(400);
		const { error } = (await response.json()) as { error: { message: string } };
		expect(error.message).toMatch(
			/^Bad Request: openapi: .*https:\/\/example\.com\/other\.yaml.*bundle the document into one file first \(at \/paths\/~1elsewhere\/\$ref\)\.$/,
		);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
		const unparsable = await admin("PUT", `/servers/${name}`, { openapi: { document: "openapi: 3.1.0\ninfo: [" } });
		expect(unparsable.status).toBe(400);
		expect(((await unparsable.json()) as { error: { message: string } }).error.message).toMatch(/\d+:\d+/);
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
	});

	it("a document URL that answers with an error is refused, naming the status, and nothing is registered", async () => {
		const name = uniqueName("no-doc");
		const response = await admin("PUT", `/servers/${name}`, { openapi: { url: `${RECORDER}/missing` } });
		expect(response.status).toBe(400);
		expect(((await response.json()) as { error: { message: string } }).error.message).toContain("HTTP 404");
		expect((await admin("GET", `/servers/${name}`)).status).toBe(404);
	});
});

describe("a document server whose API takes each person's OAuth token", () => {
	/** The recorder's document with its oauth scheme's flow at the OAuth fixture's authorization server. */
	function documentWithPeopleFlow(): Record<string, unknown> {
		const document = restRecorderDocument(RECORDER) as {
			components: { securitySchemes: Record<string, unknown> };
		};
		document.components.securitySchemes.oauth = {
			type: "oauth2",
			flows: {
				authorizationCode: {
					authorizationUrl: `${PEOPLE_AS}/authorize`,
					tokenUrl: `${PEOPLE_AS}/token`,
					scopes: { "mcp:tools": "Use the tools" },
				},
			},
		};
		return document;
	}

	/** A browser for the person: the gateway through the test Worker, the authorization server over the network. */
	function personBrowser(): Browser {
		const worker: typeof fetch = (input, init) => exports.default.fetch(new Request(input, init));
		return new Browser((url) => (url.origin === BASE ? worker : undefined));
	}

	async function stats(): Promise<OAuthUpstreamStats> {
		return (await fetch(`${PEOPLE_AS}/_stats`)).json();
	}

	it("a person connects at the authorization server the document's flow names, and their token reaches the API where the scheme says", async () => {
		const name = uniqueName("people-rest");
		const run = uniqueName("run");
		const response = await admin("PUT", `/servers/${name}?check=false`, {
			openapi: { document: documentWithPeopleFlow() },
			auth: { type: "oauth" },
			headers: { "X-Test-Run": run },
		});
		expect(response.status, await response.clone().text()).toBe(201);
		const { key } = await createKey({ servers: [name] });
		const refused = await readReply(await postInitialize(`/mcp/${name}`, key));
		const data = refused.error?.data as { elicitations?: Array<{ url?: string }> } | undefined;
		const link = String(data?.elicitations?.[0]?.url);
		expect(new URL(link).pathname).toBe(`/connect/${name}`);
		const before = await stats();
		const browser = personBrowser();
		const form = await browser.get(link);
		expect(form.url.origin, form.html.replace(/<[^>]*>/g, " ").slice(0, 600)).toBe(PEOPLE_AS);
		const done = await browser.submit(form, { fields: { user: "alice" } });
		expect(done.status).toBe(200);
		expect((await stats()).codeExchanges).toBe(before.codeExchanges + 1);
		const { client } = await connectClient(`/mcp/${name}`, key);
		clients.push(client);
		const seen = await client.callTool({ name: "secureOAuth", arguments: {} });
		expect(seen.isError).toBeFalsy();
		const [request] = await recorded(run);
		expect(request?.target).toBe("/secure/oauth");
		expect(request?.headers.authorization).toMatch(/^Bearer [A-Za-z0-9_-]{20,}$/);
		expect(JSON.stringify(await recorded(run))).not.toContain(key);
	});

	it("an API known only by its document's flow: discovery finds the flow's authorization and token endpoints, and tokens are asked for the API's base URL", async () => {
		// The recorder's own flow names endpoints at the recorder, which publishes no metadata of any kind.
		const name = uniqueName("flow-only");
		const document = restRecorderDocument(RECORDER);
		const response = await admin("PUT", `/servers/${name}?check=false`, {
			openapi: { document },
			auth: { type: "oauth", clientId: "the-operators-client" },
		});
		expect(response.status, await response.clone().text()).toBe(201);
		const record = await registryStub(env).getServer(name);
		const found = await discoverUpstreamAuthorization({
			serverUrl: record?.url ?? "",
			settings: { allowHttpUpstreams: true },
		});
		expect(found).toMatchObject({
			resource: `${RECORDER}/`,
			issuer: record?.url.replace(/\/mcp$/, ""),
			authorizationEndpoint: `${RECORDER}/oauth/authorize`,
			tokenEndpoint: `${RECORDER}/oauth/token`,
			registrationEndpoint: null,
			scopesSupported: ["items:read", "items:write"],
		});
	});
});
