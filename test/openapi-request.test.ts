/**
 * The call side of servers made from OpenAPI documents: a tool call made one HTTP
 * request (`buildRequest`), credentials placed where the document says
 * (`placeCredentials`), and the API's answer made a tool result (`answerOf`). The
 * requests go to the REST recorder (scripts/fixtures/rest-recorder.ts), which shows
 * each exactly as it arrived; the compiled operations are written here by hand, as
 * the compiler would make them from the recorder's document.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, inject, it } from "vitest";
import type { RecordedRestRequest } from "../scripts/fixtures/control-shapes.ts";
import { restRecorderSecuritySchemes } from "../scripts/fixtures/rest-recorder-document.ts";
import { answerOf, ERROR_EXCERPT_BYTES } from "../src/openapi/http-answer.ts";
import { type BuiltRequest, buildRequest, type CallCredentials } from "../src/openapi/http-request.ts";
import {
	type CompiledApi,
	CompiledApiSchema,
	type CompiledOperation,
	CompiledOperationSchema,
	type CompiledParameter,
	CompiledParameterSchema,
} from "../src/registry/openapi-records.ts";
import { uniqueName } from "./support/gateway.ts";

const recorder = () => `http://127.0.0.1:${inject("restRecorderPort")}`;

const NO_CREDENTIALS: CallCredentials = { bySchema: {}, bearer: null };

/** Each location's default style and explode (OpenAPI 3.1 §4.8.12.4). */
const DEFAULT_STYLE = {
	path: { style: "simple", explode: false },
	query: { style: "form", explode: true },
	header: { style: "simple", explode: false },
	cookie: { style: "form", explode: true },
} as const;

function param(
	name: string,
	location: CompiledParameter["in"],
	overrides: Partial<CompiledParameter> = {},
): CompiledParameter {
	return CompiledParameterSchema.parse({
		name,
		in: location,
		property: name,
		required: location === "path",
		allowReserved: false,
		json: false,
		...DEFAULT_STYLE[location],
		...overrides,
	});
}

function operation(
	method: CompiledOperation["method"],
	path: string,
	parts: Partial<CompiledOperation> = {},
): CompiledOperation {
	return CompiledOperationSchema.parse({
		tool: { name: `${method.toLowerCase()}${path.replace(/\W+/g, "_")}`, inputSchema: { type: "object" } },
		method,
		path,
		parameters: [],
		body: null,
		accept: "application/json",
		security: [],
		...parts,
	});
}

/** The recorder's API as compiled: its schemes, and the document's own security (a bearer token). */
function recorderApi(): CompiledApi {
	return CompiledApiSchema.parse({
		title: "REST recorder",
		version: "1.0.0",
		description: null,
		baseUrl: recorder(),
		operations: [],
		securitySchemes: restRecorderSecuritySchemes(recorder()),
		security: [{ bearerAuth: [] }],
	});
}

const getItem = operation("GET", "/items/{itemId}", {
	parameters: [
		param("itemId", "path"),
		param("X-Trace-Tag", "header", { property: "traceTag" }),
		param("session", "cookie"),
	],
});

const listItems = operation("GET", "/items", {
	parameters: [
		param("tags", "query"),
		param("ids", "query", { explode: false }),
		param("filter", "query", { style: "deepObject" }),
		param("spaced", "query", { style: "spaceDelimited", explode: false }),
		param("piped", "query", { style: "pipeDelimited", explode: false }),
		param("where", "query", { allowReserved: true }),
		param("limit", "query"),
		param("search", "query", { json: true }),
	],
});

function built(
	op: CompiledOperation,
	args: Record<string, unknown>,
	options: { credentials?: CallCredentials; headers?: Record<string, string> } = {},
): BuiltRequest {
	const result = buildRequest(recorderApi(), op, args, {
		credentials: options.credentials ?? NO_CREDENTIALS,
		headers: options.headers ?? {},
	});
	if ("problem" in result) throw new Error(`expected a request, got the problem: ${result.problem}`);
	return result;
}

function problemOf(op: CompiledOperation, args: Record<string, unknown>): string {
	const result = buildRequest(recorderApi(), op, args, { credentials: NO_CREDENTIALS, headers: {} });
	if (!("problem" in result)) throw new Error(`expected a problem, got a request to ${result.url}`);
	return result.problem;
}

/**
 * Builds the call, sends it to the recorder tagged with a header of its own, and returns the
 * request exactly as the recorder received it, with the answer.
 */
async function sent(
	op: CompiledOperation,
	args: Record<string, unknown>,
	options: { credentials?: CallCredentials; headers?: Record<string, string> } = {},
): Promise<{ recorded: RecordedRestRequest; response: Response; request: BuiltRequest }> {
	const tag = uniqueName("call");
	const request = built(op, args, { ...options, headers: { ...options.headers, "x-test-tag": tag } });
	const response = await fetch(request.url, request.init);
	const log = (await (await fetch(`${recorder()}/__log`)).json()) as RecordedRestRequest[];
	const recorded = log.filter((entry) => entry.headers["x-test-tag"] === tag);
	expect(recorded).toHaveLength(1);
	return { recorded: recorded[0] as RecordedRestRequest, response, request };
}

/** The query of a recorded target, as sent. */
function queryOf(recorded: RecordedRestRequest): string {
	return recorded.target.slice(recorded.target.indexOf("?") + 1);
}

function textOf(result: CallToolResult): string {
	const [first] = result.content;
	if (first?.type !== "text") throw new Error(`expected text content, got ${JSON.stringify(result.content)}`);
	return first.text;
}

describe("path parameters stay inside their segment", () => {
	it("a path value ../admin arrives as the one segment ..%2Fadmin, and the API reads it as ../admin", async () => {
		const { recorded, response, request } = await sent(getItem, { itemId: "../admin" });
		// Workers' URL parser keeps it where it is: nothing steps the path up.
		expect(new URL(request.url).pathname).toBe("/items/..%2Fadmin");
		expect(recorded.target).toBe("/items/..%2Fadmin");
		expect(await response.json()).toMatchObject({ id: "../admin" });
	});

	it("a value %2F arrives as %252F, so the API decodes it to the text %2F and not to a slash", async () => {
		const { recorded, response } = await sent(getItem, { itemId: "%2F" });
		expect(recorded.target).toBe("/items/%252F");
		expect(await response.json()).toMatchObject({ id: "%2F" });
	});

	it("?, #, ;, spaces and non-ASCII in a path value are percent-encoded and arrive inside the segment", async () => {
		const { recorded, response } = await sent(getItem, { itemId: "a?b#c;d e/é" });
		expect(recorded.target).toBe("/items/a%3Fb%23c%3Bd%20e%2F%C3%A9");
		expect(await response.json()).toMatchObject({ id: "a?b#c;d e/é" });
	});

	it("a path value that is a whole . or .. segment is refused, since a URL parser reads even %2E%2E as a step up", () => {
		// Why no encoding will do: the WHATWG parser (Workers' own) normalises percent-encoded dot segments too.
		expect(new URL(`${recorder()}/items/%2E%2E`).pathname).toBe("/");
		expect(new URL(`${recorder()}/items/%2e`).pathname).toBe("/items/");
		for (const itemId of [".", ".."]) {
			expect(problemOf(getItem, { itemId })).toBe(
				`The argument "itemId" makes the path segment "${itemId}", which a URL would take as a step in the path, not as a value; it cannot be sent.`,
			);
		}
	});

	it("dots inside a longer segment are sent as they are", async () => {
		const { recorded } = await sent(getItem, { itemId: "..." });
		expect(recorded.target).toBe("/items/...");
	});

	it("a missing or empty path argument is refused, naming the argument", () => {
		expect(problemOf(getItem, {})).toBe('The argument "itemId" is required: it is the path parameter "itemId".');
		expect(problemOf(getItem, { itemId: null })).toBe(
			'The argument "itemId" is required: it is the path parameter "itemId".',
		);
		expect(problemOf(getItem, { itemId: "" })).toBe(
			'The argument "itemId" is empty; the path parameter "itemId" needs a value.',
		);
	});

	it("label style writes a list as .1,2 and matrix style an exploded object as ;x=1;y=2", async () => {
		const shape = operation("GET", "/shapes/{coords}", {
			parameters: [param("coords", "path", { style: "label" })],
		});
		expect((await sent(shape, { coords: [1, 2] })).recorded.target).toBe("/shapes/.1,2");
		const point = operation("GET", "/points/{point}", {
			parameters: [param("point", "path", { style: "matrix", explode: true })],
		});
		expect((await sent(point, { point: { x: 1, y: 2 } })).recorded.target).toBe("/points/;x=1;y=2");
	});

	it("simple, label and matrix styles write primitives, lists and objects as OpenAPI's table shows", () => {
		const cases: [Partial<CompiledParameter>, unknown, string][] = [
			[{ style: "simple" }, 5, "/points/5"],
			[{ style: "simple" }, [3, 4, 5], "/points/3,4,5"],
			[{ style: "simple" }, { role: "admin", firstName: "Alex" }, "/points/role,admin,firstName,Alex"],
			[{ style: "simple", explode: true }, { role: "admin", firstName: "Alex" }, "/points/role=admin,firstName=Alex"],
			[{ style: "label" }, 5, "/points/.5"],
			[{ style: "label", explode: true }, [3, 4, 5], "/points/.3.4.5"],
			[{ style: "label", explode: true }, { role: "admin", firstName: "Alex" }, "/points/.role=admin.firstName=Alex"],
			[{ style: "matrix" }, 5, "/points/;point=5"],
			[{ style: "matrix" }, [3, 4, 5], "/points/;point=3,4,5"],
			[{ style: "matrix", explode: true }, [3, 4, 5], "/points/;point=3;point=4;point=5"],
			[{ style: "matrix" }, { role: "admin", firstName: "Alex" }, "/points/;point=role,admin,firstName,Alex"],
			// A comma inside a value is encoded, so the list's own commas stay the only delimiters.
			[{ style: "simple" }, ["a,b", "c"], "/points/a%2Cb,c"],
		];
		for (const [style, value, path] of cases) {
			const op = operation("GET", "/points/{point}", { parameters: [param("point", "path", style)] });
			expect(new URL(built(op, { point: value }).url).pathname, JSON.stringify([style, value])).toBe(path);
		}
	});
});

describe("query parameters are serialised by style and explode", () => {
	it("form style sends an exploded list as repeated pairs and an unexploded one comma-joined", async () => {
		const { recorded } = await sent(listItems, { tags: ["a", "b c"], ids: [1, 2, 3] });
		expect(queryOf(recorded)).toBe("tags=a&tags=b%20c&ids=1,2,3");
	});

	it("spaceDelimited and pipeDelimited join a list with an encoded space and pipe", async () => {
		const { recorded } = await sent(listItems, { spaced: ["a", "b"], piped: ["c", "d|e"] });
		expect(queryOf(recorded)).toBe("spaced=a%20b&piped=c%7Cd%7Ce");
	});

	it("deepObject sends each property as name[key]=value, and refuses anything but an object", async () => {
		const { recorded } = await sent(listItems, { filter: { color: "red", size: "L" } });
		expect(queryOf(recorded)).toBe("filter%5Bcolor%5D=red&filter%5Bsize%5D=L");
		expect(problemOf(listItems, { filter: ["red"] })).toBe(
			'The argument "filter" must be an object: the query parameter "filter" is sent in deepObject style (filter[key]=value).',
		);
	});

	it("allowReserved keeps RFC 3986's reserved characters but still encodes &, =, + and # so the query keeps its shape", async () => {
		const { recorded } = await sent(listItems, { where: "a/b:c,d[0]@e&f=g+h#i j" });
		expect(queryOf(recorded)).toBe("where=a/b:c,d[0]@e%26f%3Dg%2Bh%23i%20j");
	});

	it("without allowReserved every reserved character in a query value is encoded", async () => {
		const { recorded } = await sent(listItems, { tags: ["a/b?c&d=e#f"] });
		expect(queryOf(recorded)).toBe("tags=a%2Fb%3Fc%26d%3De%23f");
	});

	it("a content-JSON parameter is sent as its JSON text, encoded", async () => {
		const { recorded } = await sent(listItems, { search: { q: "x y" } });
		expect(queryOf(recorded)).toBe("search=%7B%22q%22%3A%22x%20y%22%7D");
		expect(new URLSearchParams(queryOf(recorded)).get("search")).toBe('{"q":"x y"}');
	});

	it("numbers and booleans are sent as their JSON text; optional arguments left out or null send nothing", async () => {
		const { recorded } = await sent(listItems, { limit: 10, where: true, tags: null });
		expect(queryOf(recorded)).toBe("where=true&limit=10");
		const { recorded: bare } = await sent(listItems, {});
		expect(bare.target).toBe("/items");
	});

	it("a nested value is refused, naming the argument", () => {
		expect(problemOf(listItems, { tags: [["a"]] })).toBe(
			'The argument "tags" holds a nested or null value, which the query parameter "tags" (style form) cannot send: give a string, number or boolean, a list of them, or an object of them.',
		);
	});

	it("a missing required query argument is refused, naming the argument", () => {
		const slow = operation("GET", "/slow", { parameters: [param("ms", "query", { required: true })] });
		expect(problemOf(slow, {})).toBe('The argument "ms" is required: it is the query parameter "ms".');
	});
});

describe("headers, cookies and the server's headers", () => {
	it("header and cookie parameters arrive; the server's headers are sent and MCP's transport headers are not", async () => {
		const { recorded } = await sent(
			getItem,
			{ itemId: "1", traceTag: "trace 1", session: "s 1;x" },
			{
				headers: {
					"X-Tenant": "t1",
					"Mcp-Session-Id": "session",
					"MCP-Protocol-Version": "2025-11-25",
					"Mcp-Method": "tools/call",
					"Mcp-Name": "getItem",
					"Last-Event-ID": "7",
				},
			},
		);
		expect(recorded.headers["x-tenant"]).toBe("t1");
		expect(recorded.headers["x-trace-tag"]).toBe("trace 1");
		expect(recorded.headers.cookie).toBe("session=s%201%3Bx");
		expect(recorded.headers.accept).toBe("application/json");
		for (const name of ["mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name", "last-event-id"]) {
			expect(recorded.headers[name], name).toBeUndefined();
		}
	});

	it("the operation's Accept wins over a server header of the same name", async () => {
		const text = operation("GET", "/text", { accept: "text/plain" });
		const { recorded } = await sent(text, {}, { headers: { accept: "application/xml" } });
		expect(recorded.headers.accept).toBe("text/plain");
	});

	it("a header value with a line break is refused, naming the argument, and so is one beyond Latin-1", () => {
		const sentence =
			'The argument "traceTag" cannot be sent in the header "X-Trace-Tag": a header value is one line of printable Latin-1 characters (no line breaks, control characters or characters beyond U+00FF).';
		expect(problemOf(getItem, { itemId: "1", traceTag: "a\r\nX-Admin: yes" })).toBe(sentence);
		expect(problemOf(getItem, { itemId: "1", traceTag: "€" })).toBe(sentence);
	});

	it("header parameters named Accept, Content-Type or Authorization are ignored, as OpenAPI says", async () => {
		const op = operation("GET", "/public", {
			parameters: [param("Authorization", "header"), param("Accept", "header")],
		});
		const { recorded } = await sent(op, { Authorization: "Bearer stolen", Accept: "text/html" });
		expect(recorded.headers.authorization).toBeUndefined();
		expect(recorded.headers.accept).toBe("application/json");
	});
});

describe("bodies", () => {
	const updateItem = operation("PUT", "/items/{itemId}", {
		parameters: [param("itemId", "path")],
		body: { property: "body", mediaType: "application/json", required: true },
	});

	it("a JSON body is sent as JSON with its media type, with the method the operation names", async () => {
		const { recorded, response } = await sent(updateItem, { itemId: "7", body: { name: "n", tags: ["x"] } });
		expect(recorded.method).toBe("PUT");
		expect(recorded.target).toBe("/items/7");
		expect(recorded.headers["content-type"]).toBe("application/json");
		expect(recorded.body).toBe('{"name":"n","tags":["x"]}');
		expect(await response.json()).toEqual({ id: "7", name: "n", tags: ["x"] });
	});

	it("a form body is sent urlencoded, a list as repeated fields", async () => {
		const submit = operation("POST", "/forms", {
			body: { property: "body", mediaType: "application/x-www-form-urlencoded", required: true },
		});
		const { recorded, response } = await sent(submit, { body: { name: "a b&c", count: 2, pick: ["x", "y"] } });
		expect(recorded.headers["content-type"]).toBe("application/x-www-form-urlencoded");
		expect(recorded.body).toBe("name=a+b%26c&count=2&pick=x&pick=y");
		expect(await response.json()).toEqual({ name: "a b&c", count: "2", pick: ["x", "y"] });
	});

	it("a required body left out is refused, and a DELETE is sent with no body and, its operation naming none, no Accept", async () => {
		expect(problemOf(updateItem, { itemId: "7" })).toBe('The argument "body" is required: it is the request\'s body.');
		const deleteItem = operation("DELETE", "/items/{itemId}", { parameters: [param("itemId", "path")], accept: null });
		const { recorded, response } = await sent(deleteItem, { itemId: "7" });
		expect(recorded.method).toBe("DELETE");
		expect(recorded.body).toBe("");
		expect(recorded.headers.accept).toBeUndefined();
		expect(response.status).toBe(204);
	});

	it("the request does not follow redirects", () => {
		expect(built(getItem, { itemId: "1" }).init.redirect).toBe("manual");
	});
});

describe("credentials go where the document's security schemes say", () => {
	const secure = (path: string, security: CompiledOperation["security"]) => operation("GET", path, { security });

	it("an API key in the query is sent under its name", async () => {
		const { recorded, response } = await sent(
			secure("/secure/query", [{ queryKey: [] }]),
			{},
			{
				credentials: { bySchema: { queryKey: "k 1" }, bearer: null },
			},
		);
		expect(recorded.target).toBe("/secure/query?api_key=k+1");
		expect(response.status).toBe(200);
	});

	it("an API key in a header is sent as that header", async () => {
		const { recorded } = await sent(
			secure("/secure/header", [{ headerKey: [] }]),
			{},
			{
				credentials: { bySchema: { headerKey: "k2" }, bearer: null },
			},
		);
		expect(recorded.headers["x-api-key"]).toBe("k2");
	});

	it("an API key in a cookie is sent beside the cookie parameters and the server's Cookie header", async () => {
		const op = operation("GET", "/secure/cookie", {
			security: [{ cookieKey: [] }],
			parameters: [param("session", "cookie")],
		});
		const { recorded } = await sent(
			op,
			{ session: "s1" },
			{
				credentials: { bySchema: { cookieKey: "k3=" }, bearer: null },
				headers: { cookie: "region=eu" },
			},
		);
		expect(recorded.headers.cookie).toBe("region=eu; session=s1; sid=k3=");
	});

	it("HTTP Basic credentials are sent base64-encoded", async () => {
		const { recorded } = await sent(
			secure("/secure/basic", [{ basicAuth: [] }]),
			{},
			{
				credentials: { bySchema: { basicAuth: "Aladdin:open sesame" }, bearer: null },
			},
		);
		// RFC 7617 §2's example.
		expect(recorded.headers.authorization).toBe("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
	});

	it("a person's token reaches an OAuth 2 operation as a bearer token", async () => {
		const { recorded, response } = await sent(
			secure("/secure/oauth", [{ oauth: ["items:read"] }]),
			{},
			{
				credentials: { bySchema: {}, bearer: "person-token" },
			},
		);
		expect(recorded.headers.authorization).toBe("Bearer person-token");
		expect(response.status).toBe(200);
	});

	it("an operation without security of its own takes the document's", async () => {
		const { recorded } = await sent(
			secure("/secure/bearer", null),
			{},
			{
				credentials: { bySchema: { bearerAuth: "operator-token" }, bearer: null },
			},
		);
		expect(recorded.headers.authorization).toBe("Bearer operator-token");
	});

	it("an API key scheme takes the person's token when the operator gave none for it", async () => {
		const { recorded } = await sent(
			secure("/secure/header", [{ headerKey: [] }]),
			{},
			{
				credentials: { bySchema: {}, bearer: "person-token" },
			},
		);
		expect(recorded.headers["x-api-key"]).toBe("person-token");
	});

	it("an operation with security [] is sent no credentials, even when the gateway holds every one", async () => {
		const { recorded, response } = await sent(
			secure("/public", []),
			{},
			{
				credentials: {
					bySchema: { queryKey: "k1", headerKey: "k2", cookieKey: "k3", bearerAuth: "t", basicAuth: "u:p", oauth: "o" },
					bearer: "person-token",
				},
			},
		);
		expect(recorded.target).toBe("/public");
		expect(await response.json()).toEqual({ authorization: null, apiKeyQuery: null, apiKeyHeader: null, cookie: null });
	});

	it("the first requirement whose every credential is held is the one used", async () => {
		// The first needs a header key too, which the gateway does not hold: the second is used, alone.
		const op = secure("/secure/basic", [{ queryKey: [], headerKey: [] }, { basicAuth: [] }, { queryKey: [] }]);
		const { recorded } = await sent(
			op,
			{},
			{
				credentials: { bySchema: { queryKey: "k1", basicAuth: "u:p" }, bearer: null },
			},
		);
		expect(recorded.target).toBe("/secure/basic");
		expect(recorded.headers.authorization).toBe("Basic dTpw");
		expect(recorded.headers["x-api-key"]).toBeUndefined();
	});

	it("an optional-authentication requirement ({}) still gets the credentials the gateway holds for another", async () => {
		const { recorded } = await sent(
			secure("/secure/query", [{}, { queryKey: [] }]),
			{},
			{
				credentials: { bySchema: { queryKey: "k1" }, bearer: null },
			},
		);
		expect(recorded.target).toBe("/secure/query?api_key=k1");
	});

	it("when no requirement can be met nothing is placed, and the API's 401 becomes an error result", async () => {
		const op = secure("/secure/basic", [{ basicAuth: [] }]);
		const { recorded, response } = await sent(op, {}, { credentials: { bySchema: {}, bearer: "person-token" } });
		expect(recorded.headers.authorization).toBeUndefined();
		const result = await answerOf(response, op, 1_000_000);
		expect(result.isError).toBe(true);
		expect(textOf(result)).toBe('HTTP 401 Unauthorized from GET /secure/basic:\n{"error":"basic credential required"}');
	});

	it("credentials in the query follow the parameters' own pairs", async () => {
		const op = operation("GET", "/secure/query", {
			security: [{ queryKey: [] }],
			parameters: [param("limit", "query")],
		});
		const { recorded } = await sent(op, { limit: 3 }, { credentials: { bySchema: { queryKey: "k1" }, bearer: null } });
		expect(recorded.target).toBe("/secure/query?limit=3&api_key=k1");
	});
});

describe("answers become tool results", () => {
	async function answered(op: CompiledOperation, args: Record<string, unknown> = {}, maxBytes = 1_000_000) {
		const request = built(op, args);
		return answerOf(await fetch(request.url, request.init), op, maxBytes);
	}

	it("a JSON object becomes structuredContent, and the same JSON is the text", async () => {
		const result = await answered(getItem, { itemId: "1" });
		expect(result).toEqual({
			content: [{ type: "text", text: '{"id":"1","name":"item 1","tags":[]}' }],
			structuredContent: { id: "1", name: "item 1", tags: [] },
		});
	});

	it("a JSON array becomes structuredContent { result: [...] }, and the array is the text", async () => {
		const result = await answered(listItems);
		const items = [
			{ id: "1", name: "first", tags: ["a"] },
			{ id: "2", name: "second", tags: [] },
		];
		expect(result).toEqual({
			content: [{ type: "text", text: JSON.stringify(items) }],
			structuredContent: { result: items },
		});
	});

	it("a JSON number becomes structuredContent { result: 42 }", async () => {
		expect(await answered(operation("GET", "/count"))).toEqual({
			content: [{ type: "text", text: "42" }],
			structuredContent: { result: 42 },
		});
	});

	it("a text answer is passed on as text, and an XML answer too", async () => {
		expect(await answered(operation("GET", "/text", { accept: "text/plain" }))).toEqual({
			content: [{ type: "text", text: "plain words, naïvely" }],
		});
		expect(await answered(operation("GET", "/xml", { accept: "application/xml" }))).toEqual({
			content: [{ type: "text", text: '<item id="1"/>' }],
		});
	});

	it("an image is described by its type and size, not passed on", async () => {
		expect(await answered(operation("GET", "/image", { accept: "image/png" }))).toEqual({
			content: [
				{
					type: "text",
					text: "The API answered image/png of 33 bytes, which is not passed on: only JSON and text are.",
				},
			],
		});
	});

	it("a 204 becomes the text HTTP 204 No Content", async () => {
		const deleteItem = operation("DELETE", "/items/{itemId}", { parameters: [param("itemId", "path")], accept: null });
		expect(await answered(deleteItem, { itemId: "1" })).toEqual({
			content: [{ type: "text", text: "HTTP 204 No Content" }],
		});
	});

	it("a 404 becomes an error result with the status line and the API's own error", async () => {
		expect(await answered(operation("GET", "/missing"))).toEqual({
			content: [{ type: "text", text: 'HTTP 404 Not Found from GET /missing:\n{"error":"no such thing"}' }],
			isError: true,
		});
	});

	it("a 500 with a long body is quoted to 2 KiB at most, cut at a character boundary", async () => {
		const result = await answered(operation("GET", "/broken", { accept: "text/plain" }));
		expect(result.isError).toBe(true);
		const text = textOf(result);
		const head = "HTTP 500 Internal Server Error from GET /broken:\n";
		const tail = `\n[… cut at ${ERROR_EXCERPT_BYTES} bytes]`;
		expect(text.startsWith(head) && text.endsWith(tail)).toBe(true);
		const excerpt = text.slice(head.length, -tail.length);
		// "E" then two-byte "é"s: byte 2048 is the second half of one, so the cut falls before it.
		expect(excerpt).toBe(`E${"é".repeat(1023)}`);
		expect(new TextEncoder().encode(excerpt).byteLength).toBe(2047);
	});

	it("a redirect is an error saying the API redirected and redirects are not followed", async () => {
		expect(await answered(operation("GET", "/moved"))).toEqual({
			content: [
				{
					type: "text",
					text: "The API redirected (HTTP 302 Found to /items) and the gateway does not follow redirects, so GET /moved has no answer.",
				},
			],
			isError: true,
		});
	});

	it("invalid JSON under a JSON content type is an error with a sentence", async () => {
		const result = await answered(operation("GET", "/invalid-json"));
		expect(result.isError).toBe(true);
		expect(textOf(result)).toMatch(
			/^The API said its answer is JSON \(application\/json\), but it is not valid JSON: /,
		);
		expect(result.structuredContent).toBeUndefined();
	});

	it("an answer larger than the cap is an error, not a cut JSON", async () => {
		const big = operation("GET", "/big", { parameters: [param("bytes", "query", { required: true })] });
		expect(await answered(big, { bytes: 5000 }, 4096)).toEqual({
			content: [{ type: "text", text: "The API's answer was larger than the gateway takes (more than 4096 bytes)." }],
			isError: true,
		});
		const small = await answered(big, { bytes: 10 }, 4096);
		expect(small.structuredContent).toEqual({ data: "a".repeat(10) });
	});
});
