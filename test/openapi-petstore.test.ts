import { env } from "cloudflare:test";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import petstore30 from "@readme/oas-examples/3.0/json/petstore.json";
import starTrek from "@readme/oas-examples/3.0/json/star-trek.json";
import petstore31 from "@readme/oas-examples/3.1/json/petstore.json";
import trainTravel from "@readme/oas-examples/3.1/json/train-travel.json";
import { afterEach, describe, expect, inject, it } from "vitest";
import { createApp } from "../src/edge/app.ts";
import { forgetIsolateCaches } from "../src/primitives/expiring-map.ts";
import { countingEnv } from "./support/counting-env.ts";
import { admin, connectClient, createKey, readReply, uniqueName } from "./support/gateway.ts";
import { ENVELOPE, modernPost, modernRequest } from "./support/modern.ts";

/**
 * Servers made from real OpenAPI documents (`@readme/oas-examples`' petstore,
 * 3.0 and 3.1), their operations answered by a real mock API (Prism, which
 * enforces each operation's security and parameters), reached through the
 * gateway by SDK clients of both eras.
 */

const clients: Client[] = [];
afterEach(async () => {
	await Promise.all(clients.splice(0).map((client) => client.close()));
});

type Document = Record<string, unknown>;

/** Registers the petstore `document` as a server, its calls sent to Prism, its api_key filled by the operator. */
async function registerPetstore(document: Document, port: number, extra: Record<string, unknown> = {}) {
	const name = uniqueName("petstore");
	const response = await admin("PUT", `/servers/${name}?check=false`, {
		openapi: {
			document,
			baseUrl: `http://127.0.0.1:${port}`,
			credentials: { api_key: "${UPSTREAM_PETSTORE_KEY}" },
		},
		...extra,
	});
	expect(response.status, await response.clone().text()).toBe(201);
	return { name, shown: (await response.json()) as Record<string, unknown> };
}

async function client(path: string, key: string): Promise<Client> {
	const { client: connected } = await connectClient(path, key);
	clients.push(connected);
	return connected;
}

describe("a server made from the petstore document", () => {
	for (const [version, document, port] of [
		["3.0", petstore30, () => inject("petstore30Port")],
		["3.1", petstore31, () => inject("petstore31Port")],
	] as const) {
		it(`OpenAPI ${version}: one tool per operation, named by operationId, with its parameters' schemas and the method's annotations`, async () => {
			const { name, shown } = await registerPetstore(document, port());
			expect(shown).toMatchObject({ openapi: { document: "inline", tools: 20 } });
			expect(shown).not.toHaveProperty("url");
			const { key } = await createKey({ servers: [name] });
			const { tools } = await (await client(`/mcp/${name}`, key)).listTools();
			expect(tools.map((tool) => tool.name).sort()).toEqual(
				[
					"addPet",
					"createUser",
					"createUsersWithArrayInput",
					"createUsersWithListInput",
					"deleteOrder",
					"deletePet",
					"deleteUser",
					"findPetsByStatus",
					"findPetsByTags",
					"getInventory",
					"getOrderById",
					"getPetById",
					"getUserByName",
					"loginUser",
					"logoutUser",
					"placeOrder",
					"updatePet",
					"updatePetWithForm",
					"updateUser",
					"uploadFile",
				].sort(),
			);
			const byName = new Map(tools.map((tool) => [tool.name, tool]));
			const getPet = byName.get("getPetById");
			expect(getPet?.annotations).toMatchObject({ readOnlyHint: true });
			expect(getPet?.inputSchema).toMatchObject({
				type: "object",
				properties: { petId: { type: "integer" } },
				required: ["petId"],
			});
			expect(byName.get("deletePet")?.annotations).toMatchObject({ destructiveHint: true });
			expect(byName.get("updatePet")?.annotations).toMatchObject({ idempotentHint: true });
			expect(byName.get("findPetsByStatus")?.inputSchema).toMatchObject({
				properties: { status: { type: "array" } },
				required: ["status"],
			});
		});

		it(`OpenAPI ${version}: getPetById reaches the API with the operator's api_key and answers the pet as structured content and text`, async () => {
			const { name } = await registerPetstore(document, port());
			const { key } = await createKey({ servers: [name] });
			const result = await (await client(`/mcp/${name}`, key)).callTool({
				name: "getPetById",
				arguments: { petId: 7 },
			});
			expect(result.isError).toBeFalsy();
			expect(result.structuredContent).toMatchObject({ name: "doggie" });
			const [text] = result.content as Array<{ type: string; text: string }>;
			expect(JSON.parse(text?.text ?? "")).toEqual(result.structuredContent);
		});
	}

	it("a call whose operation needs a credential the server has none for is an isError result naming HTTP 401", async () => {
		const { name } = await registerPetstore(petstore30, inject("petstore30Port"));
		const { key } = await createKey({ servers: [name] });
		// findPetsByStatus asks for petstore_auth (OAuth), which the operator gave nothing for.
		const result = await (await client(`/mcp/${name}`, key)).callTool({
			name: "findPetsByStatus",
			arguments: { status: ["available"] },
		});
		expect(result.isError).toBe(true);
		expect((result.content as Array<{ text: string }>)[0]?.text).toMatch(/^HTTP 401/);
	});

	it("a 2025 client on /mcp calls an operation as <server>__<operationId>", async () => {
		const { name } = await registerPetstore(petstore31, inject("petstore31Port"));
		const { key } = await createKey({ servers: [name] });
		const aggregate = await client("/mcp", key);
		const { tools } = await aggregate.listTools();
		expect(tools.map((tool) => tool.name)).toContain(`${name}__getPetById`);
		const result = await aggregate.callTool({ name: `${name}__getPetById`, arguments: { petId: 1 } });
		expect(result.structuredContent).toMatchObject({ name: "doggie" });
	});

	it("a 2026-07-28 client calls an operation on /mcp/<server> and on /mcp", async () => {
		const { name } = await registerPetstore(petstore31, inject("petstore31Port"));
		const { key } = await createKey({ servers: [name] });
		for (const [path, tool] of [
			[`/mcp/${name}`, "getPetById"],
			["/mcp", `${name}__getPetById`],
		] as const) {
			const body = { id: 1, method: "tools/call", params: { name: tool, arguments: { petId: 3 }, _meta: ENVELOPE } };
			const reply = await readReply(await modernPost(path, key, body));
			expect(reply.result?.structuredContent, path).toMatchObject({ name: "doggie" });
		}
	});

	it("ten 2026-07-28 requests to a document server wake no session object: the edge answers them in its isolate", async () => {
		const { name } = await registerPetstore(petstore31, inject("petstore31Port"));
		const { key } = await createKey({ servers: [name] });
		forgetIsolateCaches();
		const app = createApp();
		const { counts, env: counted } = countingEnv();
		// The dashboard's call counts reach their own object in batches, apart from what a request costs.
		const cachingEnv = {
			...counted,
			CALL_COUNTS: env.CALL_COUNTS,
			KEY_CACHE_TTL_SECONDS: "60",
			ENDPOINT_CACHE_TTL_SECONDS: "60",
		};
		for (let id = 1; id <= 10; id++) {
			const body =
				id % 2 === 0
					? { id, method: "tools/call", params: { name: "getPetById", arguments: { petId: id }, _meta: ENVELOPE } }
					: { id, method: "tools/list", params: { _meta: ENVELOPE } };
			const reply = await readReply(await app.fetch(modernRequest(`/mcp/${name}`, key, body), cachingEnv));
			expect(reply.error).toBeUndefined();
		}
		// What reaches a Durable Object at all is the registry recording the first list it saw, once.
		expect(counts.durableObjectCalls).toBeLessThanOrEqual(1);
	});

	it("a policy denying destructive tools refuses deletePet, and an exclude glob hides the user operations from list and call", async () => {
		const { name } = await registerPetstore(petstore30, inject("petstore30Port"), {
			tools: { exclude: ["*User*", "loginUser", "logoutUser"] },
		});
		const policy = uniqueName("no-deletes");
		const denying = {
			expression: "tool.annotations.destructiveHint == true",
			effect: "deny",
			applies: { servers: [name] },
		};
		expect((await admin("PUT", `/policies/${policy}`, denying)).status).toBe(201);
		try {
			// An earlier test kept the policies for a while in this isolate: a fresh read sees this one.
			forgetIsolateCaches();
			const { key } = await createKey({ servers: [name] });
			const connected = await client(`/mcp/${name}`, key);
			const names = (await connected.listTools()).tools.map((tool) => tool.name);
			expect(names.filter((tool) => /User/.test(tool))).toEqual([]);
			expect(names).not.toContain("deletePet");
			const refused = await connected.callTool({ name: "deletePet", arguments: { petId: 1 } }).then(
				() => null,
				(error: Error) => error.message,
			);
			expect(refused).toMatch(/no-deletes|policy/i);
			const hidden = await connected.callTool({ name: "getUserByName", arguments: { username: "a" } }).then(
				() => null,
				(error: Error) => error.message,
			);
			expect(hidden).toMatch(/getUserByName/);
		} finally {
			await admin("DELETE", `/policies/${policy}`);
		}
	});
});

describe("servers made from larger real documents", () => {
	it("train-travel (OpenAPI 3.1, schemas behind chains of $refs): its tools' schemas are resolved, and a call with the operator's OAuth token answers what the API makes of them", async () => {
		const name = uniqueName("trains");
		const response = await admin("PUT", `/servers/${name}?check=false`, {
			openapi: {
				document: trainTravel,
				baseUrl: `http://127.0.0.1:${inject("trainTravelPort")}`,
				credentials: { OAuth2: "${UPSTREAM_PETSTORE_KEY}" },
			},
		});
		expect(response.status, await response.clone().text()).toBe(201);
		const { key } = await createKey({ servers: [name] });
		const connected = await client(`/mcp/${name}`, key);
		const tools = new Map((await connected.listTools()).tools.map((tool) => [tool.name, tool]));
		expect([...tools.keys()].sort()).toEqual(
			[
				"create-booking",
				"create-booking-payment",
				"delete-booking",
				"get-booking",
				"get-bookings",
				"get-stations",
				"get-trips",
			].sort(),
		);
		const schemas = JSON.stringify([...tools.values()].map((tool) => [tool.inputSchema, tool.outputSchema]));
		expect(schemas).not.toContain("$ref");
		expect(tools.get("get-trips")?.inputSchema).toMatchObject({
			properties: { origin: { type: "string" }, destination: { type: "string" } },
		});
		const trips = await connected.callTool({
			name: "get-trips",
			arguments: {
				origin: "efdbb9d1-02c2-4bc3-afb7-6788d8782b1e",
				destination: "b2e783e1-c824-4d63-b37a-d8d698862f1d",
				date: "2024-02-01T09:00:00Z",
			},
		});
		expect(trips.isError, JSON.stringify(trips.content)).toBeFalsy();
		expect(trips.structuredContent).toEqual(expect.any(Object));
	});

	it("star-trek (120 operations, none with an operationId): tools.include chooses a few, named <method>_<path>, and only those are listed and called", async () => {
		const name = uniqueName("star-trek");
		const response = await admin("PUT", `/servers/${name}?check=false`, {
			openapi: { document: starTrek, baseUrl: `http://127.0.0.1:${inject("starTrekPort")}` },
			tools: { include: ["get_animal*"] },
		});
		expect(response.status, await response.clone().text()).toBe(201);
		const shown = (await response.json()) as { openapi: { tools: number } };
		expect(shown.openapi.tools).toBe(2);
		const { key } = await createKey({ servers: [name] });
		const connected = await client(`/mcp/${name}`, key);
		expect((await connected.listTools()).tools.map((tool) => tool.name).sort()).toEqual([
			"get_animal",
			"get_animal_search",
		]);
		const found = await connected.callTool({ name: "get_animal_search", arguments: { pageNumber: 0, pageSize: 5 } });
		expect(found.isError, JSON.stringify(found.content)).toBeFalsy();
		const refused = await connected.callTool({ name: "get_book", arguments: { uid: "x" } }).then(
			() => null,
			(error: Error) => error.message,
		);
		expect(refused).toMatch(/get_book/);
	});
});
