import { GatewayError } from "../mcp/gateway-error.ts";
import { isolateCache, keepFound } from "../primitives/expiring-map.ts";
import { keyMayUseServer, keyMayUseVirtualServer } from "../registry/access.ts";
import { type Disclosure, disclosureOf } from "../registry/disclosure-schema.ts";
import type { PromptShaping, ResourceShaping } from "../registry/offer-shaping-schema.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import type { ApiKeyRecord, ResolvedEndpoint, ServerRecord } from "../registry/schemas.ts";
import type { EndpointTools } from "../registry/tool-shaping-schema.ts";
import { type EndpointCheck, type Member, memberOf, type OpenSessionInput } from "../session/session-do.ts";
import type { McpContext } from "./request-context.ts";

/**
 * Endpoint records and the server list, per isolate for a few seconds: a
 * 2026-07-28 client resolves its endpoint on every request, and would
 * otherwise pay a KV read each time. A deleted or changed endpoint reaches
 * new requests within this TTL (plus KV's own staleness), as a revoked key does.
 */
const endpoints = isolateCache<ResolvedEndpoint | null>({ maxEntries: 1_000 });
const serverLists = isolateCache<ServerRecord[]>({ maxEntries: 1 });

/** An endpoint as the session will be bound to it. */
export interface EndpointPlan {
	mode: OpenSessionInput["mode"];
	endpointCheck: EndpointCheck;
	members: Member[];
	/** A virtual server's choice of its members' tools. */
	endpointTools?: EndpointTools | null;
	/** A virtual server's choice of its members' prompts and resources. */
	endpointPrompts?: PromptShaping | null;
	endpointResources?: ResourceShaping | null;
	/** How the aggregate discloses its tools (the key's or rule's for `/mcp`, the virtual server's). */
	disclosure?: Disclosure;
}

/**
 * The endpoint of an admitted request as its principal may use it, read
 * through the request's reader (a failed read is its `registry_unavailable`):
 * at initialize (2025) and for each 2026-07-28 request.
 */
export function planEndpoint(c: McpContext): Promise<EndpointPlan> {
	const name = c.req.param("name");
	const reader = c.get("reader");
	const { key } = c.get("principal");
	const ttlMs = c.get("settings").endpointCacheTtlMs;
	return name ? planNamedEndpoint(reader, key, name, ttlMs) : planAggregate(reader, key, c.req.raw, ttlMs);
}

/** `/mcp/:name`: a server (transparent) or a virtual server (aggregate of its members). */
async function planNamedEndpoint(
	reader: RegistryReader,
	key: ApiKeyRecord,
	name: string,
	ttlMs: number,
): Promise<EndpointPlan> {
	const endpoint = await endpoints.load(name, () => reader.endpoint(name), keepFound(ttlMs), reader);
	if (endpoint?.kind === "server" && keyMayUseServer(key, name)) {
		return {
			mode: "transparent",
			endpointCheck: { kind: "server", name, generation: endpoint.server.generation },
			members: [memberOf(endpoint.server)],
		};
	}
	if (endpoint?.kind === "virtual" && keyMayUseVirtualServer(key, endpoint.virtualServer)) {
		return {
			mode: "aggregate",
			endpointCheck: { kind: "virtual", name, generation: endpoint.virtualServer.generation },
			members: endpoint.members.map(memberOf),
			endpointTools: endpoint.virtualServer.tools,
			endpointPrompts: endpoint.virtualServer.prompts,
			endpointResources: endpoint.virtualServer.resources,
			disclosure: disclosureOf(endpoint.virtualServer),
		};
	}
	// Absent and forbidden look the same, so an endpoint's existence is not revealed.
	throw unknownEndpoint(name);
}

/**
 * `/mcp`: every server the key may use, narrowed at initialize by
 * `X-MCP-Servers: a,b` (unknown names ignored; empty means all). The set is
 * fixed for the life of the session. A key whose list names no existing
 * server (only virtual servers, or servers deleted since) has no `/mcp`: a
 * virtual server it names is reached at its own endpoint and nowhere else.
 */
async function planAggregate(
	reader: RegistryReader,
	key: ApiKeyRecord,
	request: Request,
	ttlMs: number,
): Promise<EndpointPlan> {
	const wanted = (request.headers.get("x-mcp-servers") ?? "")
		.split(",")
		.map((part) => part.trim())
		.filter((part) => part !== "");
	const all = await serverLists.load(
		"servers",
		() => reader.servers(),
		() => ttlMs,
		reader,
	);
	const allowed = all.filter((server) => keyMayUseServer(key, server.name));
	if (key.servers !== null && allowed.length === 0) throw unknownEndpoint("/mcp");
	const servers = allowed.filter((server) => wanted.length === 0 || wanted.includes(server.name));
	return {
		mode: "aggregate",
		endpointCheck: { kind: "aggregate" },
		members: servers.map(memberOf),
		disclosure: disclosureOf(key),
	};
}

/** The 404 for an endpoint that does not exist or that the key may not use: the same, so neither is revealed. */
export function unknownEndpoint(name: string): GatewayError {
	return new GatewayError("not_found", `Not Found: there is no MCP endpoint '${name}' for this API key.`);
}
