/// <reference types="vite/types/importMeta.d.ts" />
import petstore20 from "@readme/oas-examples/2.0/json/petstore.json";
import circularBodies from "@readme/oas-examples/3.0/json/circular-request-bodies.json";
import petstore30 from "@readme/oas-examples/3.0/json/petstore.json";
import readmeLegacy from "@readme/oas-examples/3.0/json/readme-legacy.json";
import schemaCircular from "@readme/oas-examples/3.0/json/schema-circular.json";
import serverPathLevel from "@readme/oas-examples/3.0/json/server-path-level.json";
import serverVariables from "@readme/oas-examples/3.0/json/server-variables.json";
import starTrek from "@readme/oas-examples/3.0/json/star-trek.json";
import parametersStyle from "@readme/oas-examples/3.1/json/parameters-style.json";
import petstore31 from "@readme/oas-examples/3.1/json/petstore.json";
import security31 from "@readme/oas-examples/3.1/json/security.json";
import webhooks from "@readme/oas-examples/3.1/json/webhooks.json";
import { describe, expect, it } from "vitest";
import { type CompileOptions, compileApi, MAX_COMPILED_BYTES } from "../src/openapi/compile.ts";
import { type DocumentProblem, loadDocument, type OpenApiDocument } from "../src/openapi/document-load.ts";
import { MAX_DOCUMENT_BYTES, MAX_YAML_ALIASES } from "../src/openapi/document-text.ts";
import { MAX_SCHEMA_NODES } from "../src/openapi/schema-bounds.ts";
import { type CompiledApi, CompiledApiSchema, type CompiledOperation } from "../src/registry/openapi-records.ts";

/*
 * The document side of servers made from OpenAPI documents, in workerd (where
 * the gateway runs them: no `new Function`, so no Ajv), with real documents
 * from @readme/oas-examples and small ones written here for each problem.
 */

/** Every example document as text, JSON and YAML alike, by its path under @readme/oas-examples. */
const EXAMPLES: Record<string, string> = Object.fromEntries(
	Object.entries(
		import.meta.glob<string>("../node_modules/@readme/oas-examples/{2.0,3.0,3.1}/{json,yaml}/*.{json,yaml}", {
			query: "?raw",
			import: "default",
			eager: true,
		}),
	).map(([path, text]) => [path.replace("../node_modules/@readme/oas-examples/", ""), text]),
);

function example(path: string): string {
	const text = EXAMPLES[path];
	if (text === undefined) throw new Error(`no example ${path}`);
	return text;
}

const EVERYTHING: CompileOptions = { documentUrl: null, baseUrl: null, keep: () => true, maxTools: 1_000 };

async function loaded(source: string | Record<string, unknown>): Promise<OpenApiDocument> {
	const result = await loadDocument(source);
	if ("problem" in result) throw new Error(`not loaded: ${result.problem} at ${result.where}`);
	return result.document;
}

async function compiled(
	source: string | Record<string, unknown>,
	options: Partial<CompileOptions> = {},
): Promise<{ api: CompiledApi; notes: string[] }> {
	const result = compileApi(await loaded(source), { ...EVERYTHING, ...options });
	if ("problem" in result) throw new Error(`not compiled: ${result.problem}`);
	return result;
}

async function problemOf(source: string | Record<string, unknown>): Promise<DocumentProblem> {
	const result = await loadDocument(source);
	if (!("problem" in result)) throw new Error("loaded, but a problem was expected");
	return result;
}

function operation(api: CompiledApi, tool: string): CompiledOperation {
	const found = api.operations.find((candidate) => candidate.tool.name === tool);
	if (found === undefined) throw new Error(`no tool ${tool}`);
	return found;
}

/** A small OpenAPI 3.1 document with these paths. */
function documentWith(paths: Record<string, unknown>, more: Record<string, unknown> = {}): Record<string, unknown> {
	return {
		openapi: "3.1.0",
		info: { title: "Test API", version: "1.0.0" },
		servers: [{ url: "https://api.example/v1" }],
		paths,
		...more,
	};
}

const OK = { "200": { description: "OK" } };

const PET = {
	type: "object",
	required: ["name", "photoUrls"],
	properties: {
		id: { type: "integer", format: "int64", readOnly: true, default: 40, examples: [25] },
		category: { type: "object", properties: { id: { type: "integer", format: "int64" }, name: { type: "string" } } },
		name: { type: "string", examples: ["doggie"] },
		photoUrls: { type: "array", items: { type: "string", examples: ["https://example.com/photo.png"] } },
		tags: {
			type: "array",
			items: { type: "object", properties: { id: { type: "integer", format: "int64" }, name: { type: "string" } } },
		},
		status: { type: "string", description: "pet status in the store", enum: ["available", "pending", "sold"] },
	},
};

describe("a document compiled into tools", () => {
	it("the 3.0 petstore becomes one tool per operation, named by operationId, path by path and each path's methods in the order get, put, post, delete, options, head, patch, trace", async () => {
		const { api, notes } = await compiled(petstore30);
		expect(api.operations.map((o) => o.tool.name)).toEqual([
			"updatePet",
			"addPet",
			"findPetsByStatus",
			"findPetsByTags",
			"getPetById",
			"updatePetWithForm",
			"deletePet",
			"uploadFile",
			"getInventory",
			"placeOrder",
			"getOrderById",
			"deleteOrder",
			"createUser",
			"createUsersWithArrayInput",
			"createUsersWithListInput",
			"loginUser",
			"logoutUser",
			"getUserByName",
			"updateUser",
			"deleteUser",
		]);
		expect(api).toMatchObject({
			title: "Swagger Petstore",
			version: "1.0.0",
			baseUrl: "http://petstore.swagger.io/v2",
		});
		expect(notes).toEqual([
			"Tool uploadFile: its optional request body (multipart/form-data) is left out; only JSON and form bodies are sent.",
		]);
	});

	it("a tool has the summary as title, summary and description as description, its parameters and the 2xx JSON answer's object schema", async () => {
		const { api } = await compiled(petstore30);
		expect(operation(api, "getPetById")).toEqual({
			tool: {
				name: "getPetById",
				title: "Find pet by ID",
				description: "Find pet by ID\n\nReturns a single pet",
				inputSchema: {
					type: "object",
					properties: { petId: { type: "integer", format: "int64", description: "ID of pet to return" } },
					required: ["petId"],
				},
				outputSchema: PET,
				annotations: { title: "Find pet by ID", readOnlyHint: true },
			},
			method: "GET",
			path: "/pet/{petId}",
			parameters: [
				{
					name: "petId",
					in: "path",
					property: "petId",
					required: true,
					style: "simple",
					explode: false,
					allowReserved: false,
					json: false,
				},
			],
			body: null,
			accept: "application/json, application/xml",
			security: [{ api_key: [] }],
		});
	});

	it("a 2xx JSON answer that is not an object is the outputSchema's `result`, and query parameters default to form, exploded", async () => {
		const { api } = await compiled(petstore30);
		const find = operation(api, "findPetsByStatus");
		expect(find.tool.outputSchema).toEqual({
			type: "object",
			properties: { result: { type: "array", items: PET } },
			required: ["result"],
		});
		expect(find.parameters).toEqual([
			{
				name: "status",
				in: "query",
				property: "status",
				required: true,
				style: "form",
				explode: true,
				allowReserved: false,
				json: false,
			},
		]);
	});

	it("GET and HEAD are read-only, DELETE destructive, PUT idempotent, POST none of them", async () => {
		const { api } = await compiled(petstore30);
		expect(operation(api, "getInventory").tool.annotations).toEqual({
			title: "Returns pet inventories by status",
			readOnlyHint: true,
		});
		expect(operation(api, "deletePet").tool.annotations).toEqual({ title: "Deletes a pet", destructiveHint: true });
		expect(operation(api, "updateUser").tool.annotations).toEqual({ title: "Updated user", idempotentHint: true });
		expect(operation(api, "addPet").tool.annotations).toEqual({ title: "Add a new pet to the store" });
	});

	it("a JSON request body is the `body` property, with its schema, description and required", async () => {
		const { api } = await compiled(petstore30);
		const add = operation(api, "addPet");
		expect(add.body).toEqual({ property: "body", mediaType: "application/json", required: true });
		expect(add.tool.inputSchema).toEqual({
			type: "object",
			properties: { body: { ...PET, description: "Pet object that needs to be added to the store" } },
			required: ["body"],
		});
	});

	it("a form body is sent as a form, and its fields are the body's schema", async () => {
		const { api } = await compiled(petstore30);
		const update = operation(api, "updatePetWithForm");
		expect(update.body).toEqual({ property: "body", mediaType: "application/x-www-form-urlencoded", required: false });
		expect(update.tool.inputSchema).toEqual({
			type: "object",
			properties: {
				petId: { type: "integer", format: "int64", description: "ID of pet that needs to be updated" },
				body: {
					type: "object",
					properties: {
						name: { type: "string", description: "Updated name of the pet" },
						status: { type: "string", description: "Updated status of the pet" },
					},
				},
			},
			required: ["petId"],
		});
	});

	it("the same document in YAML compiles to the same tools as in JSON (the 3.1 petstore)", async () => {
		const fromYaml = await compiled(example("3.1/yaml/petstore.yaml"));
		const fromJson = await compiled(petstore31);
		expect(fromYaml).toEqual(fromJson);
		expect(fromYaml.api.operations).toHaveLength(20);
	});

	it("a Swagger 2.0 document is converted to OpenAPI 3.1, and a note says so", async () => {
		const { api, notes } = await compiled(petstore20);
		expect(notes[0]).toBe("The Swagger 2.0 document was converted to OpenAPI 3.1 to be read.");
		expect(api.baseUrl).toBe("http://petstore.swagger.io/v2");
		expect(api.operations).toHaveLength(20);
		expect(api.securitySchemes).toEqual({
			petstore_auth: {
				type: "oauth2",
				flows: {
					implicit: {
						authorizationUrl: "http://petstore.swagger.io/oauth/dialog",
						scopes: { "write:pets": "modify pets in your account", "read:pets": "read your pets" },
					},
				},
			},
			api_key: { type: "apiKey", in: "header", name: "api_key" },
		});
		expect(operation(api, "getPetById").accept).toBe("application/json, application/xml");
	});

	it("every example document that compiles gives a record the registry's schema accepts", async () => {
		let compiledCount = 0;
		for (const [path, text] of Object.entries(EXAMPLES)) {
			const document = await loadDocument(text);
			if ("problem" in document) continue;
			const result = compileApi(document.document, { ...EVERYTHING, baseUrl: "https://api.example" });
			if ("problem" in result) continue;
			expect(CompiledApiSchema.safeParse(result.api).success, path).toBe(true);
			compiledCount++;
		}
		// All but the webhooks-only documents (no operations), in both JSON and YAML.
		expect(compiledCount).toBe(Object.keys(EXAMPLES).length - 2);
	});
});

describe("tool names", () => {
	it("an operationId is made a valid tool name; without one the tool is <method>_<path>; a repeated name gets _2", async () => {
		const { api } = await compiled(
			documentWith({
				"/pets/{petId}": {
					get: { operationId: "get pet (by id)", responses: OK },
					delete: { responses: OK },
				},
				"/": { get: { responses: OK } },
				"/orders": {
					get: { operationId: "get pet (by id)", responses: OK },
					post: { operationId: "é", responses: OK },
				},
				"/long": {
					get: { operationId: "x".repeat(200), responses: OK },
					put: { operationId: "x".repeat(130), responses: OK },
				},
			}),
		);
		expect(api.operations.map((o) => o.tool.name)).toEqual([
			"get_pet__by_id_",
			"delete_pets_petId",
			"get",
			"get_pet__by_id__2",
			"post_orders",
			"x".repeat(128),
			`${"x".repeat(126)}_2`,
		]);
	});

	it("names are given before tools.include chooses, so choosing never renames a tool", async () => {
		const paths = {
			"/a": { get: { operationId: "same", responses: OK } },
			"/b": { get: { operationId: "same", responses: OK } },
		};
		const { api } = await compiled(documentWith(paths), { keep: (name) => name !== "same" });
		expect(api.operations.map((o) => [o.tool.name, o.path])).toEqual([["same_2", "/b"]]);
	});
});

describe("parameters and bodies", () => {
	it("styles and explode are as the document says, and by default form+explode for query and cookie, simple for path and header", async () => {
		const { api } = await compiled(parametersStyle);
		const shape = (tool: string) => operation(api, tool).parameters.map((p) => [p.name, p.in, p.style, p.explode]);
		expect(shape("cookies_standard")).toEqual([
			["primitive", "cookie", "form", true],
			["array", "cookie", "form", true],
			["object", "cookie", "form", true],
		]);
		expect(shape("headers_standard")).toEqual([
			["primitive", "header", "simple", false],
			["array", "header", "simple", false],
			["object", "header", "simple", false],
		]);
		expect(shape("paths_standard")).toEqual([
			["primitive", "path", "simple", false],
			["array", "path", "simple", false],
			["object", "path", "simple", false],
		]);
		expect(shape("paths_matrix_exploded")).toEqual([
			["primitive", "path", "matrix", true],
			["array", "path", "matrix", true],
			["object", "path", "matrix", true],
		]);
		expect(shape("query_pipeDelimited_nonExploded")).toEqual([
			["array", "query", "pipeDelimited", false],
			["object", "query", "pipeDelimited", false],
		]);
		expect(shape("query_deepObject_nonExploded")).toEqual([["object", "query", "deepObject", true]]);
	});

	it("a name two locations share is <in>_<name> for the later one, a parameter named body moves the body to requestBody, path-level parameters come first", async () => {
		const { api } = await compiled(
			documentWith({
				"/items/{id}": {
					parameters: [
						{ name: "id", in: "path", required: true, schema: { type: "string" } },
						{ name: "trace", in: "header", schema: { type: "string" } },
					],
					post: {
						parameters: [
							{ name: "id", in: "query", required: true, schema: { type: "integer" } },
							{ name: "body", in: "query", schema: { type: "string" } },
							{ name: "trace", in: "header", description: "overrides the path's", schema: { type: "boolean" } },
							{ name: "Accept", in: "header", schema: { type: "string" } },
							{ name: "filter", in: "query", content: { "application/json": { schema: { type: "object" } } } },
						],
						requestBody: {
							required: true,
							content: { "application/merge-patch+json": { schema: { type: "object" } } },
						},
						responses: OK,
					},
				},
			}),
		);
		const post = operation(api, "post_items_id");
		expect(post.parameters.map((p) => [p.name, p.in, p.property, p.required, p.json])).toEqual([
			["id", "path", "id", true, false],
			["id", "query", "query_id", true, false],
			["body", "query", "body", false, false],
			["trace", "header", "trace", false, false],
			["filter", "query", "filter", false, true],
		]);
		expect(post.body).toEqual({ property: "requestBody", mediaType: "application/merge-patch+json", required: true });
		expect(post.tool.inputSchema).toEqual({
			type: "object",
			properties: {
				id: { type: "string" },
				query_id: { type: "integer" },
				body: { type: "string" },
				trace: { type: "boolean", description: "overrides the path's" },
				filter: { type: "object" },
				requestBody: { type: "object" },
			},
			required: ["id", "query_id", "requestBody"],
		});
	});

	it("Accept, Content-Type and Authorization header parameters are not inputs (OpenAPI ignores them)", async () => {
		const { api } = await compiled(schemaCircular);
		const put = operation(api, "put_circular");
		expect(put.parameters).toEqual([]);
		expect(put.tool.inputSchema).toEqual({ type: "object", properties: {} });
	});

	it("an operation whose required body is neither JSON nor a form is left out, with a note naming it; a choice of only such operations is refused with why", async () => {
		const { api, notes } = await compiled(readmeLegacy);
		expect(api.operations.map((o) => o.tool.name)).not.toContain("uploadAPISpecification");
		expect(notes).toEqual([
			"Operation POST /api-specification (uploadAPISpecification) is left out: its request body is multipart/form-data, and only JSON and form bodies are sent.",
			"Operation PUT /api-specification/{id} (updateAPISpecification) is left out: its request body is multipart/form-data, and only JSON and form bodies are sent.",
		]);
		const onlyThat = compileApi(await loaded(readmeLegacy), {
			...EVERYTHING,
			keep: (name) => name === "uploadAPISpecification",
		});
		expect(onlyThat).toEqual({
			problem:
				"None of the chosen operations can be called through the gateway. Operation POST /api-specification (uploadAPISpecification) is left out: its request body is multipart/form-data, and only JSON and form bodies are sent.",
		});
	});
});

describe("schemas are bounded", () => {
	it("a recursive schema is cut where its reference recurs, with a description naming it", async () => {
		const { api } = await compiled(circularBodies);
		const tree = {
			type: "object",
			title: "TreeNode",
			required: ["id", "name", "parent"],
			properties: {
				id: { type: "string" },
				name: { type: "string" },
				parent: {
					type: "object",
					description: "TreeNode, recursively: the same schema as the enclosing TreeNode, not expanded again.",
				},
				children: {
					type: "array",
					items: {
						type: "object",
						description: "TreeNode, recursively: the same schema as the enclosing TreeNode, not expanded again.",
					},
				},
			},
		};
		const direct = operation(api, "directCircular");
		expect(direct.tool.inputSchema).toEqual({ type: "object", properties: { body: tree } });
		expect(direct.tool.outputSchema).toEqual(tree);
		// Two hops: Person → Company → Person is cut at the second Person.
		expect(operation(api, "indirectCircular").tool.outputSchema).toEqual({
			type: "object",
			title: "Person",
			required: ["name"],
			properties: {
				name: { type: "string" },
				employer: {
					type: "object",
					title: "Company",
					required: ["name"],
					properties: {
						name: { type: "string" },
						ceo: {
							type: "object",
							description: "Person, recursively: the same schema as the enclosing Person, not expanded again.",
						},
					},
				},
			},
		});
	});

	it("a schema of more subschemas than a tool lists is left open past the bound, and a note says so", async () => {
		const wide = {
			type: "object",
			properties: Object.fromEntries(
				Array.from({ length: MAX_SCHEMA_NODES + 10 }, (_, i) => [`field${i}`, { type: "string" }]),
			),
		};
		const { api, notes } = await compiled(
			documentWith({
				"/wide": {
					post: {
						operationId: "wide",
						requestBody: { content: { "application/json": { schema: wide } } },
						responses: OK,
					},
				},
			}),
		);
		const body = operation(api, "wide").tool.inputSchema.properties as {
			body: { properties: Record<string, unknown> };
		};
		const fields = Object.values(body.body.properties);
		expect(fields.filter((field) => JSON.stringify(field) === '{"type":"string"}')).toHaveLength(MAX_SCHEMA_NODES - 1);
		expect(fields.at(-1)).toEqual({ description: "Left out: the schema is too large to list in full." });
		expect(notes).toEqual([
			"Tool wide: its input schema is too large to list in full; the deepest parts are left open.",
		]);
	});

	it("a compiled API over 1 MiB is refused, telling the operator to choose fewer operations", async () => {
		const large = {
			type: "object",
			properties: Object.fromEntries(
				Array.from({ length: 500 }, (_, i) => [`field${i}`, { type: "string", description: "d".repeat(100) }]),
			),
		};
		const paths = Object.fromEntries(
			Array.from({ length: 20 }, (_, i) => [
				`/things${i}`,
				{
					get: {
						responses: {
							"200": {
								description: "OK",
								content: { "application/json": { schema: { $ref: "#/components/schemas/Large" } } },
							},
						},
					},
				},
			]),
		);
		const document = await loaded(documentWith(paths, { components: { schemas: { Large: large } } }));
		const refused = compileApi(document, EVERYTHING);
		expect(refused).toEqual({
			problem: `The compiled tools take more than the ${MAX_COMPILED_BYTES / 1024} KiB a server may; choose fewer operations with tools.include.`,
		});
		const fewer = compileApi(document, { ...EVERYTHING, keep: (name) => name === "get_things1" });
		expect("api" in fewer && fewer.api.operations.map((o) => o.tool.name)).toEqual(["get_things1"]);
	});
});

describe("choosing operations", () => {
	it("a large document (star-trek, 120 operations) is narrowed by keep, and capped at maxTools with a note", async () => {
		const document = await loaded(starTrek);
		const kept = compileApi(document, {
			...EVERYTHING,
			keep: (name) => name.startsWith("get_spacecraft"),
			maxTools: 2,
		});
		if ("problem" in kept) throw new Error(kept.problem);
		expect(kept.api.operations.map((o) => o.tool.name)).toEqual(["get_spacecraft", "get_spacecraft_search"]);
		expect(kept.notes).toEqual([
			"2 more operations are left out: a server lists at most 2 tools; choose them with tools.include.",
		]);
		const all = compileApi(document, EVERYTHING);
		expect("api" in all && all.api.operations).toHaveLength(120);
	});

	it("a choice that keeps no operation is refused, naming some of the tools there would be", async () => {
		const result = compileApi(await loaded(petstore30), { ...EVERYTHING, keep: () => false });
		expect(result).toEqual({
			problem:
				"None of the document's 20 operations is kept by the server's tools.include and tools.exclude; the tools would be: updatePet, addPet, findPetsByStatus, findPetsByTags, getPetById, updatePetWithForm, deletePet, uploadFile, getInventory, placeOrder, and 10 more.",
		});
	});
});

describe("the base URL", () => {
	it("is the first server's URL with its variables at their defaults, without a trailing slash", async () => {
		const { api, notes } = await compiled(serverVariables);
		expect(api.baseUrl).toBe("https://demo.example.com/v2");
		expect(notes).toEqual(["3 operations name servers of their own; every call goes to https://demo.example.com/v2."]);
	});

	it("operation and path-level servers are not followed: a note says every call goes to the base URL", async () => {
		const { notes } = await compiled(serverPathLevel);
		expect(notes).toEqual(["7 operations name servers of their own; every call goes to https://demo.example.com/v2."]);
	});

	it("a relative server URL is resolved against the document's URL, and no servers means the document's origin", async () => {
		const relative = await compiled(
			documentWith({ "/a": { get: { responses: OK } } }, { servers: [{ url: "../api/" }] }),
			{
				documentUrl: "https://docs.example/specs/openapi.json",
			},
		);
		expect(relative.api.baseUrl).toBe("https://docs.example/api");
		const none = await compiled(documentWith({ "/a": { get: { responses: OK } } }, { servers: [] }), {
			documentUrl: "https://docs.example/specs/openapi.json",
		});
		expect(none.api.baseUrl).toBe("https://docs.example");
	});

	it("the operator's baseUrl wins over the document's servers", async () => {
		const { api } = await compiled(petstore30, { baseUrl: "https://pets.internal/api/" });
		expect(api.baseUrl).toBe("https://pets.internal/api");
	});

	it("an inline document with a relative server, or a server that is not http(s), is refused: give openapi.baseUrl", async () => {
		const relative = compileApi(
			await loaded(documentWith({ "/a": { get: { responses: OK } } }, { servers: [{ url: "/v1" }] })),
			EVERYTHING,
		);
		expect(relative).toEqual({
			problem:
				"The document's server URL \"/v1\" is not an absolute URL, and the document was given inline: give openapi.baseUrl, the API's absolute http(s) address.",
			where: "/servers/0/url",
		});
		const ftp = compileApi(
			await loaded(documentWith({ "/a": { get: { responses: OK } } }, { servers: [{ url: "ftp://files.example" }] })),
			EVERYTHING,
		);
		expect(ftp).toEqual({
			problem:
				"The document's server URL \"ftp://files.example\" is not an http(s) URL: give openapi.baseUrl, the API's absolute http(s) address.",
			where: "/servers/0/url",
		});
	});
});

describe("security schemes", () => {
	it("API keys, HTTP bearer and basic, OAuth 2 flows and OpenID Connect are compiled; mutualTLS is left out with a note", async () => {
		const { api, notes } = await compiled(security31);
		expect(Object.keys(api.securitySchemes)).not.toContain("mutualTLS");
		expect(api.securitySchemes.apiKey_cookie).toEqual({ type: "apiKey", in: "cookie", name: "api_key" });
		expect(api.securitySchemes.apiKey_query).toEqual({ type: "apiKey", in: "query", name: "apiKey" });
		expect(api.securitySchemes.bearer_jwt).toEqual({ type: "http", scheme: "bearer" });
		expect(api.securitySchemes.basic).toEqual({ type: "http", scheme: "basic" });
		expect(api.securitySchemes.oauth2).toEqual({
			type: "oauth2",
			flows: {
				authorizationCode: {
					authorizationUrl: "http://example.com/oauth/dialog",
					tokenUrl: "http://example.com/oauth/token",
					scopes: { "write:things": "Add things to your account" },
				},
				clientCredentials: {
					tokenUrl: "http://example.com/oauth/token",
					scopes: { "write:things": "Add things to your account" },
				},
				implicit: {
					authorizationUrl: "http://example.com/oauth/dialog",
					scopes: { "write:things": "Add things to your account" },
				},
				password: {
					tokenUrl: "http://example.com/oauth/token",
					scopes: { "write:things": "Add things to your account" },
				},
			},
		});
		expect(notes).toEqual([
			'Security scheme "mutualTLS" is left out: type "mutualTLS" is not supported (apiKey, http, oauth2 and openIdConnect are).',
		]);
		// An operation that requires only the left-out scheme requires nothing the gateway can place.
		const tls = api.operations.find((o) => o.path === "/anything/mutualTLS");
		expect(tls?.security).toEqual([]);
	});
});

describe("documents refused, with the problem and where", () => {
	it("JSON with a syntax error names its line and column", async () => {
		const problem = await problemOf('{\n  "openapi": "3.1.0",\n  "info": {\n    "title": "x",,\n  }\n}');
		expect(problem.where).toBe("4:18");
		expect(problem.problem).toMatch(/^The document is not valid JSON: .+\.$/);
	});

	it("YAML with a syntax error names its line and column", async () => {
		expect(await problemOf("openapi: 3.1.0\ninfo:\n  title: x\n  version: [1\npaths: {}\n")).toEqual({
			problem:
				"The document is neither JSON nor valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ].",
			where: "5:1",
		});
		const duplicate = await problemOf("openapi: 3.1.0\nopenapi: 3.0.0\n");
		expect(duplicate).toEqual({
			problem: "The document is neither JSON nor valid YAML: Map keys must be unique.",
			where: "2:1",
		});
	});

	it("a document with no operations is refused, where: /paths (the 3.1 webhooks example)", async () => {
		expect(await problemOf(webhooks)).toEqual({
			problem: "The document has no operations: nothing under its paths to make a tool of.",
			where: "/paths",
		});
	});

	it("a $ref to another file or URL is refused, naming the reference and where it stands", async () => {
		const document = documentWith({
			"/pets": {
				get: {
					responses: {
						"200": {
							description: "OK",
							content: { "application/json": { schema: { $ref: "https://schemas.example/pet.json#/Pet" } } },
						},
					},
				},
			},
		});
		expect(await problemOf(document)).toEqual({
			problem:
				'The document refers to "https://schemas.example/pet.json#/Pet", outside itself; only references inside the document ("#/…") are followed, so bundle the document into one file first.',
			where: "/paths/~1pets/get/responses/200/content/application~1json/schema/$ref",
		});
	});

	it("a $ref to nothing in the document is refused, naming it and where", async () => {
		const document = documentWith({
			"/pets": { get: { parameters: [{ $ref: "#/components/parameters/missing" }], responses: OK } },
		});
		expect(await problemOf(document)).toEqual({
			problem: 'The document refers to "#/components/parameters/missing", which it does not contain.',
			where: "/paths/~1pets/get/parameters/0/$ref",
		});
	});

	it("a `$ref` inside an example is data, not a reference", async () => {
		const document = documentWith({
			"/pets": {
				get: {
					responses: {
						"200": { description: "OK", content: { "application/json": { example: { $ref: "elsewhere.json" } } } },
					},
				},
			},
		});
		expect("document" in (await loadDocument(document))).toBe(true);
	});

	it("a structure the compiler cannot read is refused with its JSON pointer", async () => {
		const document = documentWith({ "/pets": { get: { parameters: [{ name: "limit", in: "body" }], responses: OK } } });
		const problem = await problemOf(document);
		expect(problem.where).toBe("/paths/~1pets/get/parameters/0/in");
		expect(problem.problem).toMatch(/^The document is not a valid OpenAPI document where the gateway reads it: .+\.$/);
		expect(await problemOf({ openapi: "3.1.0", info: { version: "1" }, paths: {} })).toMatchObject({
			where: "/info/title",
		});
	});

	it("a version other than OpenAPI 3.0, 3.1 or Swagger 2.0 is refused with a sentence", async () => {
		expect(await problemOf({ openapi: "4.0.0", info: { title: "x", version: "1" }, paths: {} })).toEqual({
			problem: 'The document\'s version "4.0.0" is not one the gateway reads: OpenAPI 3.0 or 3.1, or Swagger 2.0.',
			where: "/openapi",
		});
		expect(await problemOf({ swagger: "1.2" })).toEqual({
			problem: 'The document\'s version "1.2" is not one the gateway reads: OpenAPI 3.0 or 3.1, or Swagger 2.0.',
			where: "/swagger",
		});
	});

	it("a document over 4 MiB is refused before it is parsed", async () => {
		const text = `{"openapi":"3.1.0","padding":"${"x".repeat(MAX_DOCUMENT_BYTES)}"}`;
		expect(await problemOf(text)).toEqual({
			problem: "The document is larger than 4 MiB; serve a smaller one (only the operations the server needs).",
		});
	});

	it("a document nesting deeper than the JSON depth bound is refused, as text and as an object", async () => {
		const deep = `{"openapi":"3.1.0","x-deep":${"[".repeat(200)}${"]".repeat(200)}}`;
		const problem = { problem: "The document nests objects and arrays deeper than 128 levels." };
		expect(await problemOf(deep)).toEqual(problem);
		expect(await problemOf(JSON.parse(deep))).toEqual(problem);
	});

	it("YAML aliases that would expand past the bound are refused (billion laughs)", async () => {
		const lines = ["openapi: 3.1.0", "a: &a [x, x, x, x, x, x, x, x, x, x]"];
		for (let level = 1; level <= 8; level++) {
			const previous = String.fromCharCode(96 + level);
			lines.push(
				`${String.fromCharCode(97 + level)}: &${String.fromCharCode(97 + level)} [${Array(10).fill(`*${previous}`).join(", ")}]`,
			);
		}
		expect(await problemOf(lines.join("\n"))).toEqual({
			problem: `The document's YAML aliases expand too far (more than ${MAX_YAML_ALIASES} copies); write the values out or use fewer aliases.`,
		});
	});

	it("an object given is not changed by loading it", async () => {
		const before = JSON.stringify(petstore20);
		await loaded(petstore20);
		expect(JSON.stringify(petstore20)).toBe(before);
	});
});
