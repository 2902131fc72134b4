import { Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { createAdminRoutes } from "../src/edge/admin-routes.ts";
import { admin, gatewayFetch, TEST_ADMIN_BEARER } from "./support/gateway.ts";
import OPENAPI_31_SCHEMA from "./support/openapi-3.1-schema.json";

interface Document {
	openapi: string;
	paths: Record<string, Record<string, Operation>>;
}
interface Operation {
	summary?: string;
	parameters?: Array<{ name: string; in: string }>;
	requestBody?: { content: { "application/json": { schema: { properties?: Record<string, unknown> } } } };
	responses: Record<string, unknown>;
}

async function document(): Promise<Document> {
	const response = await admin("GET", "/openapi.json");
	expect(response.status).toBe(200);
	expect(response.headers.get("content-type")).toMatch(/^application\/json/);
	return (await response.json()) as Document;
}

/** What the admin router serves, as OpenAPI spells it: `get /admin/servers/{name}`. */
function servedRoutes(): Set<string> {
	return new Set(
		createAdminRoutes()
			.routes.filter((route) => route.method !== "ALL")
			.map((route) => `${route.method.toLowerCase()} /admin${route.path.replace(/:([^/]+)/g, "{$1}")}`),
	);
}

function bodyFields(doc: Document, method: string, path: string): string[] {
	const schema = doc.paths[path]?.[method]?.requestBody?.content["application/json"].schema;
	return Object.keys(schema?.properties ?? {});
}

describe("the admin API's OpenAPI document", () => {
	it("is a valid OpenAPI 3.1 document, behind the admin token like the rest of /admin", async () => {
		const doc = await document();
		expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
		const validated = new Validator(OPENAPI_31_SCHEMA as object, "2020-12", false).validate(doc);
		expect(validated.errors.slice(0, 5)).toEqual([]);
		expect(validated.valid).toBe(true);
		// The schema is not a formality: a document it should refuse, it refuses.
		const broken = { ...doc, paths: { "/admin/servers": { get: { responses: { 200: {} } } } } };
		expect(new Validator(OPENAPI_31_SCHEMA as object, "2020-12", false).validate(broken).valid).toBe(false);
		for (const path of ["/admin/openapi.json", "/admin/docs"]) {
			const anonymous = await gatewayFetch(path);
			expect(anonymous.status).toBe(401);
			expect(await anonymous.json()).toMatchObject({ error: { kind: "unauthenticated" } });
		}
	});

	it("describes every route the admin router serves, with its method, and nothing it does not serve", async () => {
		const doc = await document();
		const described = new Set(
			Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`)),
		);
		const served = servedRoutes();
		expect(served.size).toBeGreaterThanOrEqual(27);
		expect([...served].filter((route) => !described.has(route))).toEqual([]);
		expect([...described].filter((route) => !served.has(route))).toEqual([]);
		for (const item of Object.values(doc.paths)) {
			for (const operation of Object.values(item)) {
				expect(operation.summary).toBeTruthy();
				expect(operation.responses["401"]).toBeDefined();
			}
		}
	});

	it("carries the fields of the request schemas that validate the bodies", async () => {
		const doc = await document();
		expect(bodyFields(doc, "put", "/admin/servers/{name}")).toEqual(
			expect.arrayContaining([
				"url",
				"connector",
				"headers",
				"timeoutSeconds",
				"protocol",
				"auth",
				"tools",
				"prompts",
				"resources",
				"pinning",
			]),
		);
		expect(bodyFields(doc, "put", "/admin/virtual-servers/{name}")).toEqual(
			expect.arrayContaining(["servers", "userPaths", "tools", "prompts", "resources"]),
		);
		expect(bodyFields(doc, "post", "/admin/keys")).toEqual(
			expect.arrayContaining(["name", "userPath", "servers", "maxSessions", "rateClass"]),
		);
		expect(bodyFields(doc, "put", "/admin/access-rules/{name}")).toEqual(expect.arrayContaining(["match", "servers"]));
		expect(bodyFields(doc, "put", "/admin/policies/{name}")).toEqual(
			expect.arrayContaining(["expression", "effect", "applies", "priority"]),
		);
		expect(bodyFields(doc, "post", "/admin/servers/{name}/tools/approve")).toEqual(["tools"]);
		const put = doc.paths["/admin/servers/{name}"]?.put;
		expect(put?.parameters).toEqual(
			expect.arrayContaining([
				expect.objectContaining({ name: "name", in: "path" }),
				expect.objectContaining({ name: "check", in: "query" }),
			]),
		);
		const fields = (put?.requestBody?.content["application/json"].schema.properties ?? {}) as Record<
			string,
			{ enum?: string[]; description?: string }
		>;
		expect(fields.pinning?.enum).toEqual(["block", "warn", "off"]);
		// Each field says what it is, from the schema's own description.
		for (const field of ["url", "connector", "headers", "auth", "tools", "pinning"])
			expect(fields[field]?.description).toBeTruthy();
	});

	it("is what /admin/docs renders: each path with its methods, summaries and body fields, with no script", async () => {
		const doc = await document();
		const response = await admin("GET", "/docs");
		expect(response.status).toBe(200);
		expect(response.headers.get("content-type")).toMatch(/^text\/html/);
		expect(response.headers.get("content-security-policy")).toMatch(/default-src 'none'/);
		const page = await response.text();
		expect(page).not.toMatch(/<script/i);
		for (const [path, item] of Object.entries(doc.paths)) {
			for (const [method, operation] of Object.entries(item)) {
				expect(page).toContain(`${method.toUpperCase()}</span>${path}`);
				expect(page).toContain(operation.summary?.replace(/'/g, "&#39;") ?? "");
			}
		}
		for (const field of ["url", "pinning", "expression", "rateClass"]) expect(page).toContain(`<code>${field}</code>`);
		expect(page).toContain("What a changed or new tool definition does.");
	});

	// A name is checked before the media type, as it always was; `application/json;` (a spelling the old check
	// took) is now refused by zod-openapi's stricter media-type gate, with the admin API's own 415.
	it("leaves the admin API's refusals in its own shape: the body's schema, a name before the media type, 405", async () => {
		const badField = await admin("PUT", "/servers/docs-check", { url: "ftp://example.com/mcp" });
		expect(badField.status).toBe(400);
		expect(await badField.json()).toEqual({
			error: { kind: "bad_request", message: "Bad Request: url: must be an http(s) URL." },
		});
		const badName = await gatewayFetch("/admin/servers/Bad_Name", {
			method: "PUT",
			headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}`, "content-type": "text/plain" },
			body: "nope",
		});
		expect(((await badName.json()) as { error: { message: string } }).error.message).toMatch(
			/^Bad Request: server name/,
		);
		const strictJson = await gatewayFetch("/admin/keys", {
			method: "POST",
			headers: { authorization: `Bearer ${TEST_ADMIN_BEARER}`, "content-type": "application/json;" },
			body: "{}",
		});
		expect(strictJson.status).toBe(415);
		expect(await strictJson.json()).toMatchObject({ error: { kind: "unsupported_media_type" } });
		const notAllowed = await admin("PATCH", "/openapi.json");
		expect(notAllowed.status).toBe(405);
		expect(notAllowed.headers.get("allow")).toBe("GET, HEAD");
	});
});
