import { ToolSchema } from "@modelcontextprotocol/core";
import {
	type CallToolResult,
	createMcpHandler,
	type McpHttpHandler,
	ProtocolError,
	ProtocolErrorCode,
	Server,
	type Tool,
} from "@modelcontextprotocol/server";
import { describeError } from "../mcp/gateway-error.ts";
import type { CompiledOperation } from "../registry/openapi-records.ts";
import { GATEWAY_SET_HEADERS } from "../registry/schemas.ts";
import type { PublishedApi } from "../registry/tables/openapi-apis-table.ts";
import { resolveReferences } from "../upstream/upstream-target.ts";
import { answerOf } from "./http-answer.ts";
import { buildRequest, type CallCredentials } from "./http-request.ts";

/**
 * A document server as an MCP server: the SDK's handler (both eras,
 * stateless, the SDK's framing) over one compiled API, whose tools are its
 * operations and whose calls are HTTP requests. The gateway's session, edge
 * and aggregate reach it as they reach any upstream, at its address, so all
 * they do applies unchanged; only the answer is made here instead of on the
 * network.
 */

/** What a call needs of the gateway: its secrets and vars, and the limits upstream requests are made under. */
export interface DocumentServerHost {
	vars: Record<string, unknown>;
	maxReplyBytes: number;
	allowHttpUpstreams: boolean;
	/** The fetch the API's requests go out with (tests count them). */
	fetch: typeof fetch;
	/** Told when the API answers 401 to a call that carried the caller's own bearer token. */
	refusedBearer(): void;
}

/**
 * Headers of the MCP request that are not the API's: those the gateway sets on
 * every upstream request (the transport's), and its Authorization and
 * encoding; the rest (the server's configured headers, trace context) go on
 * to the API, and Authorization as `passedHeaders` says.
 */
function isTransportHeader(name: string): boolean {
	// Mcp-Param-* mirror a call's arguments for routing (2026-07-28): the API gets the arguments themselves.
	return (
		GATEWAY_SET_HEADERS.has(name) ||
		name === "authorization" ||
		name === "accept-encoding" ||
		name.startsWith("mcp-param-")
	);
}

/** What one compiled API answers every request with: its tools list, and its operations by tool name. */
interface Answerable {
	tools: Tool[];
	byName: Map<string, CompiledOperation>;
}

const answerables = new WeakMap<PublishedApi, Answerable>();

/** Made once per compiled API an isolate holds: its tools parsed as MCP's, so each list is the same array. */
function answerableOf(published: PublishedApi): Answerable {
	const known = answerables.get(published);
	if (known) return known;
	const operations = published.api.operations;
	const made: Answerable = {
		tools: operations.map((operation) => ToolSchema.parse(operation.tool)),
		byName: new Map(operations.map((operation) => [operation.tool.name, operation])),
	};
	answerables.set(published, made);
	return made;
}

/** The SDK handler that answers `request` for `published`. */
export function documentHandler(published: PublishedApi, host: DocumentServerHost): McpHttpHandler {
	return createMcpHandler(({ requestInfo }) => documentServer(published, host, requestInfo), {
		legacy: "stateless",
		onerror: (error) => console.warn(`openapi ${published.server}: ${error.message}`),
	});
}

function documentServer(published: PublishedApi, host: DocumentServerHost, request: Request | undefined): Server {
	const { api } = published;
	const answerable = answerableOf(published);
	const server = new Server(
		{ name: api.title || published.server, version: api.version || "unversioned" },
		{ capabilities: { tools: {} }, ...(api.description ? { instructions: api.description } : {}) },
	);
	server.setRequestHandler("tools/list", () => ({ tools: answerable.tools }));
	server.setRequestHandler("tools/call", async ({ params }) => {
		const operation = answerable.byName.get(params.name);
		if (!operation) {
			throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${params.name}`);
		}
		return call(published, operation, params.arguments ?? {}, host, request);
	});
	return server;
}

/** A tool error of the gateway's own making, in a sentence. */
function failed(text: string): CallToolResult {
	return { isError: true, content: [{ type: "text", text }] };
}

async function call(
	published: PublishedApi,
	operation: CompiledOperation,
	args: Record<string, unknown>,
	host: DocumentServerHost,
	request: Request | undefined,
): Promise<CallToolResult> {
	const credentials = credentialsOf(published, host, request);
	if ("problem" in credentials) {
		console.error(`openapi ${published.server}: misconfigured: ${credentials.problem}`);
		return failed(
			`Server '${published.server}' is misconfigured, so the gateway cannot call its API; the operator's logs say why.`,
		);
	}
	const built = buildRequest(published.api, operation, args, {
		credentials: credentials.credentials,
		headers: passedHeaders(request, published.personal),
	});
	if ("problem" in built) return failed(built.problem);
	const target = new URL(built.url);
	if (target.protocol === "http:" && !host.allowHttpUpstreams) {
		console.error(
			`openapi ${published.server}: misconfigured: its base URL is plain http and ALLOW_HTTP_UPSTREAMS is not true`,
		);
		return failed(
			`Server '${published.server}' is misconfigured, so the gateway cannot call its API; the operator's logs say why.`,
		);
	}
	let response: Response;
	try {
		response = await host.fetch(built.url, { ...built.init, redirect: "manual", signal: request?.signal ?? null });
	} catch (error) {
		// The gateway's deadline for the call aborts the request it made here, and ends the call as any
		// upstream's timeout does; what else fails here is the API not being reached at all.
		if (request?.signal.aborted) throw error;
		console.warn(`openapi ${published.server}: ${target.host} could not be reached: ${describeError(error)}`);
		return failed(`The API of server '${published.server}' (${target.host}) could not be reached.`);
	}
	if (response.status === 401 && credentials.credentials.bearer !== null) host.refusedBearer();
	return answerOf(response, operation, host.maxReplyBytes);
}

/** The credentials a call places: the operator's, resolved now, and the caller's bearer token, if any. */
function credentialsOf(
	published: PublishedApi,
	host: DocumentServerHost,
	request: Request | undefined,
): { credentials: CallCredentials } | { problem: string } {
	const bySchema: Record<string, string> = {};
	for (const [scheme, template] of Object.entries(published.credentials)) {
		const resolved = resolveReferences(template, host.vars);
		if ("problem" in resolved) return { problem: `credential ${scheme} ${resolved.problem}` };
		bySchema[scheme] = resolved.value;
	}
	// Only a caller's own token is placed by the schemes; an operator's Authorization header goes as it is.
	const authorization = published.personal ? (request?.headers.get("authorization") ?? "") : "";
	const bearer = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1] ?? null;
	return { credentials: { bySchema, bearer } };
}

/**
 * The MCP request's headers that go on to the API: the server's configured
 * headers and trace context. Its Authorization goes as it is when it is the
 * operator's (a configured header); a caller's own is placed by the schemes.
 */
function passedHeaders(request: Request | undefined, personal: boolean): Record<string, string> {
	const passed: Record<string, string> = {};
	if (!request) return passed;
	for (const [name, value] of request.headers) if (!isTransportHeader(name)) passed[name] = value;
	const authorization = request.headers.get("authorization");
	if (authorization !== null && !personal) passed.authorization = authorization;
	return passed;
}
