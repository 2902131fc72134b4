import type { Prompt, Resource, ResourceTemplate, Tool } from "@modelcontextprotocol/sdk/types.js";
import {
	aggregateNamed,
	aggregateResources,
	aggregateTemplates,
	type PerServer,
	type RouteTarget,
} from "../../mcp/aggregate.ts";
import { describeError, GatewayError } from "../../mcp/gateway-error.ts";
import { type ListItems, type ListKind, PUBLIC_LISTS, type PublicList } from "../../mcp/list-kinds.ts";
import { MAX_TOOL_NAME_LENGTH, splitNamespacedName } from "../../mcp/namespacing.ts";
import { ResourceRoutes } from "../../mcp/resource-routes.ts";
import { UnknownToolRefusal } from "../call-failures.ts";
import { forEachBounded } from "./bounded.ts";
import type { Catalog } from "./catalog.ts";

/** A refresh pass fetches each list at most once (see REFRESH_DEBOUNCE_MS in `list-refresh.ts`). */
const ONE_ATTEMPT = 1;

/** What the lists need from their session. */
export interface ListsHost {
	/** Member names, in endpoint order. */
	members(): readonly string[];
	readonly catalog: Catalog;
	/** Whether the endpoint offers a tool under this (namespaced) name: a virtual server's own choice. */
	endpointOffers(exposed: string): boolean;
	/** What of a member's list this caller may see now (the policies; the catalog holds the shaped list). */
	visible<K extends ListKind>(server: string, kind: K, items: Array<ListItems[K]>): Promise<Array<ListItems[K]>>;
}

/**
 * An aggregate's public lists: the namespaced union of its members' lists,
 * the routes they teach (names to members; resource URIs and templates, see
 * `resource-routes.ts`), and what the client last saw of each, to tell a real
 * change from a no-op list_changed.
 */
export class AggregateLists {
	private toolRoutes = new Map<string, RouteTarget>();
	private promptRoutes = new Map<string, RouteTarget>();
	private resourceRoutes = new ResourceRoutes(new Map(), new Map());
	/** The catalog version the resource routes were computed from; -1: never. */
	private resourceRoutesVersion = -1;
	/** Conflicts already reported to the operator, so each is logged once per session. */
	private readonly reportedConflicts = new Set<string>();
	/** What the client last saw of each list, to tell a real change from a no-op list_changed. */
	private readonly published = new Map<ListKind, string>();

	constructor(private readonly host: ListsHost) {}

	async tools(attempts?: number): Promise<Tool[]> {
		const named = aggregateNamed(await this.collect("tools", attempts));
		// A virtual server's choice of tools, by the names its callers see: what it leaves out is not routed either.
		const items = named.items.filter((tool) => this.host.endpointOffers(tool.name));
		this.toolRoutes = new Map([...named.routes].filter(([exposed]) => this.host.endpointOffers(exposed)));
		this.published.set("tools", JSON.stringify(items));
		return items;
	}

	async prompts(attempts?: number): Promise<Prompt[]> {
		const { items, routes } = aggregateNamed(await this.collect("prompts", attempts));
		this.promptRoutes = routes;
		this.published.set("prompts", JSON.stringify(items));
		return items;
	}

	/** Resources and templates together: both decide where a URI routes. */
	async resourceLists(attempts?: number): Promise<{ resources: Resource[]; templates: ResourceTemplate[] }> {
		const version = this.host.catalog.version;
		const [resources, templates] = await Promise.all([
			this.collect("resources", attempts),
			this.collect("resourceTemplates", attempts),
		]);
		this.resourceRoutes = new ResourceRoutes(resources, templates);
		this.resourceRoutesVersion = version;
		this.reportConflicts();
		const merged = { resources: aggregateResources(resources), templates: aggregateTemplates(templates) };
		this.published.set("resources", JSON.stringify(merged.resources));
		this.published.set("resourceTemplates", JSON.stringify(merged.templates));
		return merged;
	}

	/**
	 * Recomputes one public list, one attempt per member, and says whether it
	 * changed for the client: only a list the client has seen can have.
	 */
	async refreshed(list: PublicList): Promise<boolean> {
		const kinds = PUBLIC_LISTS[list].kinds;
		const before = kinds.map((kind) => this.published.get(kind));
		if (list === "tools") await this.tools(ONE_ATTEMPT);
		else if (list === "prompts") await this.prompts(ONE_ATTEMPT);
		else await this.resourceLists(ONE_ATTEMPT);
		return kinds.some((kind, i) => before[i] !== undefined && this.published.get(kind) !== before[i]);
	}

	/** The member and its own name for an exposed tool or prompt name. */
	async routeName(what: "tool" | "prompt", exposed: string): Promise<RouteTarget> {
		const routes = () => (what === "tool" ? this.toolRoutes : this.promptRoutes);
		let target = routes().get(exposed);
		if (!target) {
			// Not listed in this session yet (or the DO restarted): learn the list, then route.
			if (what === "tool") await this.tools();
			else await this.prompts();
			target = routes().get(exposed);
		}
		if (target) return target;
		if (what === "tool" && !this.host.endpointOffers(exposed)) throw unknown(what, exposed);
		const split = splitNamespacedName(exposed);
		// An unlisted but well-formed, unshortened name still routes by its prefix, so a
		// member that is briefly unreachable for lists can still be called.
		if (split && this.host.members().includes(split.server) && exposed.length < MAX_TOOL_NAME_LENGTH) return split;
		throw unknown(what, exposed);
	}

	/**
	 * The member a resource URI belongs to. The routes are recomputed whenever
	 * the catalog changed, so an exact listing is always consulted before any
	 * template: a member's catch-all template never takes a URI another member lists.
	 */
	async routeUri(uri: string): Promise<string> {
		await this.currentResourceRoutes();
		const route = this.resourceRoutes.route(uri);
		if (route === null) {
			throw new GatewayError("resource_not_found", `Resource not found: ${uri} is not offered by this endpoint.`);
		}
		if ("ambiguous" in route) throw ambiguous(`Resource ${uri}`, route.ambiguous);
		return route.server;
	}

	/** The member whose template a completion of `uri` is for; else the member the URI itself routes to. */
	async routeTemplate(uri: string): Promise<string> {
		await this.currentResourceRoutes();
		const route = this.resourceRoutes.routeTemplate(uri);
		if (route !== null && "ambiguous" in route) throw ambiguous(`Resource template ${uri}`, route.ambiguous);
		return route?.server ?? (await this.routeUri(uri));
	}

	private async currentResourceRoutes(): Promise<void> {
		if (this.resourceRoutesVersion !== this.host.catalog.version) await this.resourceLists();
	}

	/** Several members offering one URI or template is an operator's problem: said once, in a structured line. */
	private reportConflicts(): void {
		for (const { key, servers } of this.resourceRoutes.conflicts()) {
			if (this.reportedConflicts.has(key)) continue;
			this.reportedConflicts.add(key);
			console.warn(
				JSON.stringify({
					event: "resource_conflict",
					uri: key,
					servers,
					effect: "left out of the aggregate's lists; reads are refused as ambiguous",
				}),
			);
		}
	}

	/**
	 * Every member's list, in member order. A member that fails is left out with
	 * a logged reason instead of failing the whole list; it is asked again next
	 * time, so its entries reappear once it answers.
	 */
	private async collect<K extends ListKind>(kind: K, attempts?: number): Promise<PerServer<ListItems[K]>> {
		const members = this.host.members();
		const lists = new Map<string, Array<ListItems[K]>>();
		await forEachBounded(members, async (server) => {
			try {
				lists.set(server, await this.host.visible(server, kind, await this.host.catalog.get(server, kind, attempts)));
			} catch (error) {
				console.warn(`member ${server} left out of ${kind}: ${describeError(error)}`);
			}
		});
		return new Map(members.filter((server) => lists.has(server)).map((server) => [server, lists.get(server) ?? []]));
	}
}

function unknown(what: "tool" | "prompt", exposed: string): GatewayError {
	const sentence = `Unknown ${what}: '${exposed}' is not offered by this endpoint.`;
	return what === "tool"
		? new UnknownToolRefusal("invalid_params", sentence)
		: new GatewayError("invalid_params", sentence);
}

function ambiguous(what: string, servers: readonly string[]): GatewayError {
	return new GatewayError(
		"invalid_params",
		`${what} is offered by several servers of this endpoint (${servers.join(", ")}); the gateway does not guess which one to use. Use a server's own endpoint.`,
	);
}
