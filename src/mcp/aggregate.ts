import type {
	InitializeResult,
	Prompt,
	Resource,
	ResourceTemplate,
	ServerCapabilities,
	Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { namespacedName } from "./namespacing.ts";

/** Where an exposed tool or prompt name routes: the member server and its original name. */
export interface RouteTarget {
	server: string;
	name: string;
}

/** Lists of one member, keyed by member name. Members that failed are simply absent. */
export type PerServer<T> = ReadonlyMap<string, readonly T[]>;

/** Orders by name, code unit by code unit (the same order in every isolate, whatever its locale). */
export function byName<T extends { name: string }>(a: T, b: T): number {
	return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * Namespaces and merges tools (or prompts) of all members, sorted by exposed
 * name so the aggregate is stable. Everything but the name passes unchanged.
 */
export function aggregateNamed<T extends Tool | Prompt>(
	perServer: PerServer<T>,
): { items: T[]; routes: Map<string, RouteTarget> } {
	const items: T[] = [];
	const routes = new Map<string, RouteTarget>();
	for (const [server, list] of perServer) {
		for (const item of list) {
			const exposed = namespacedName(server, item.name);
			if (routes.has(exposed)) continue;
			routes.set(exposed, { server, name: item.name });
			items.push({ ...item, name: exposed });
		}
	}
	items.sort(byName);
	return { items, routes };
}

/**
 * Merges items that keep their upstream identity (a resource's URI, a
 * template's URI template). An identity that several members offer is left
 * out: the gateway cannot tell whose it is, and routing it to one of them
 * would hand one member's reads to another (see `resource-routes.ts`).
 * Sorted by key so the aggregate is stable.
 */
function aggregateByKey<T>(perServer: PerServer<T>, keyOf: (item: T) => string): T[] {
	const owners = new Map<string, { item: T; servers: Set<string> }>();
	for (const [server, list] of perServer) {
		for (const item of list) {
			const key = keyOf(item);
			const seen = owners.get(key);
			if (seen) seen.servers.add(server);
			else owners.set(key, { item, servers: new Set([server]) });
		}
	}
	const items = [...owners.values()].filter((owner) => owner.servers.size === 1).map((owner) => owner.item);
	return items.sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0));
}

/** Merges resources of all members; URIs stay as the upstream wrote them. */
export function aggregateResources(perServer: PerServer<Resource>): Resource[] {
	return aggregateByKey(perServer, (resource) => resource.uri);
}

/** Merges resource templates of all members. */
export function aggregateTemplates(perServer: PerServer<ResourceTemplate>): ResourceTemplate[] {
	return aggregateByKey(perServer, (template) => template.uriTemplate);
}

/**
 * Capabilities of an aggregate: what at least one member offers and the
 * gateway can really serve. List-changed notifications are the gateway's own
 * (it watches its members), so they are always announced for offered lists.
 */
export function aggregateCapabilities(members: readonly ServerCapabilities[]): ServerCapabilities {
	const capabilities: ServerCapabilities = {};
	if (members.some((m) => m.tools)) capabilities.tools = { listChanged: true };
	if (members.some((m) => m.prompts)) capabilities.prompts = { listChanged: true };
	if (members.some((m) => m.resources)) {
		capabilities.resources = { listChanged: true };
		if (members.some((m) => m.resources?.subscribe)) capabilities.resources.subscribe = true;
	}
	if (members.some((m) => m.completions)) capabilities.completions = {};
	if (members.some((m) => m.logging)) capabilities.logging = {};
	return capabilities;
}

/** Members' instructions, each labelled by its server, in member order. */
export function aggregateInstructions(
	members: ReadonlyArray<{ server: string; instructions?: string }>,
): string | undefined {
	const parts = members
		.filter((member) => member.instructions && member.instructions.trim() !== "")
		.map((member) => `## ${member.server}\n${member.instructions?.trim()}`);
	return parts.length > 0 ? parts.join("\n\n") : undefined;
}

/** The gateway's own identity in aggregate initialize results. */
export const GATEWAY_SERVER_INFO: InitializeResult["serverInfo"] = { name: "mcp-edge-gateway", version: "0.1.0" };
