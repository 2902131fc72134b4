import type { Prompt, Resource, ResourceTemplate, Tool } from "@modelcontextprotocol/sdk/types.js";
import {
	type OfferShaping,
	offeredItems,
	promptOffered,
	resourceRefusal,
	shapesList,
} from "../../governance/offer-shaping.ts";
import { realToolName, shapeTools } from "../../governance/tool-shaping.ts";
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
import { splitMemberUiUri, withMemberUiMeta, withMemberUiResource, withMemberUiTemplate } from "../../mcp/ui-uris.ts";
import { unknownName, unknownResource } from "../../mcp/unknown-offers.ts";
import type { UriForm } from "../../mcp/uri-normalize.ts";
import type { EndpointTools } from "../../registry/tool-shaping-schema.ts";
import type { SessionDecisions } from "../session-decisions.ts";
import type { SessionState } from "../session-state.ts";
import { forEachBounded } from "./bounded.ts";
import type { Catalog } from "./catalog.ts";
import type { MemberSessions } from "./member-sessions.ts";
import { type ListedTool, listedAppOnlyRefusal, viewCallTarget } from "./view-calls.ts";

/** A refresh pass fetches each list at most once (see REFRESH_DEBOUNCE_MS in `list-refresh.ts`). */
const ONE_ATTEMPT = 1;

/** Where a resource URI of the aggregate goes: the member, and the URI as that member knows it. */
export interface ResourceTarget {
	server: string;
	uri: string;
}

/**
 * An aggregate's public lists: the namespaced union of its members' lists,
 * the routes they teach (names to members; resource URIs and templates, see
 * `resource-routes.ts`), and what the client last saw of each, to tell a real
 * change from a no-op list_changed.
 */
export class AggregateLists {
	private toolRoutes = new Map<string, ListedTool>();
	private promptRoutes = new Map<string, RouteTarget>();
	private resourceRoutes = new ResourceRoutes(new Map(), new Map());
	/** The catalog version the resource routes were computed from; -1: never. */
	private resourceRoutesVersion = -1;
	/** Conflicts already reported to the operator, so each is logged once per session. */
	private readonly reportedConflicts = new Set<string>();
	/** What the client last saw of each list, to tell a real change from a no-op list_changed. */
	private readonly published = new Map<ListKind, string>();
	/** Bumped whenever the tools list computed differs from the one before (the search index follows it). */
	toolsGeneration = 0;

	constructor(
		private readonly state: SessionState,
		private readonly catalog: Catalog,
		/** What of a member's list this caller may see now (the policies; the catalog holds the shaped list). */
		private readonly decisions: SessionDecisions,
		private readonly members: MemberSessions,
	) {}

	async tools(attempts?: number): Promise<Tool[]> {
		// Each member's Views under URIs of its own (decision 0106), as `resources/list` names them.
		const named = aggregateNamed(eachMember(await this.collect("tools", attempts), withMemberUiMeta));
		// A virtual server's shaping, over the names its callers would see: what it leaves out is not routed
		// either, and an alias routes where the name it replaces did.
		const shaping = this.endpointTools();
		const items = shapeTools("virtual server", shaping, named.items);
		this.toolRoutes = new Map(
			items.flatMap((tool): Array<[string, ListedTool]> => {
				const target = named.routes.get(realToolName(shaping, tool.name) ?? "");
				return target ? [[tool.name, { target, tool }]] : [];
			}),
		);
		const published = JSON.stringify(items);
		if (published !== this.published.get("tools")) this.toolsGeneration++;
		this.published.set("tools", published);
		return items;
	}

	async prompts(attempts?: number): Promise<Prompt[]> {
		const named = aggregateNamed(await this.collect("prompts", attempts));
		// A virtual server's choice of prompts, by the names its callers see: what it leaves out is not routed either.
		const offers = this.endpointOffers();
		const items = named.items.filter((prompt) => promptOffered(offers, prompt.name));
		this.promptRoutes = new Map([...named.routes].filter(([exposed]) => promptOffered(offers, exposed)));
		this.published.set("prompts", JSON.stringify(items));
		return items;
	}

	/** Resources and templates together: both decide where a URI routes. */
	async resourceLists(attempts?: number): Promise<{ resources: Resource[]; templates: ResourceTemplate[] }> {
		const version = this.catalog.version;
		// A virtual server's choice of resources, by URI: what it leaves out neither lists, routes nor conflicts.
		const offers = this.endpointOffers();
		// Each member's `ui://` URIs in a form of their own (decision 0106): two members' Views never collide.
		const [resources, templates] = await Promise.all([
			this.collect("resources", attempts).then((lists) =>
				eachMember(offeredPerServer(offers, "resources", lists), withMemberUiResource),
			),
			this.collect("resourceTemplates", attempts).then((lists) =>
				eachMember(offeredPerServer(offers, "resourceTemplates", lists), withMemberUiTemplate),
			),
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
		const routeOf = (name: string) =>
			what === "tool" ? this.toolRoutes.get(name)?.target : this.promptRoutes.get(name);
		let target = routeOf(exposed);
		if (!target) {
			// Not listed in this session yet (or the DO restarted): learn the list, then route.
			if (what === "tool") await this.tools();
			else await this.prompts();
			target = routeOf(exposed);
		}
		if (what === "tool") {
			// A View's calls (decision 0107): app-only tools only by a View's name, a View's name to its one member.
			const listed = this.toolRoutes.get(exposed);
			if (listed) {
				const refused = listedAppOnlyRefusal(exposed, listed);
				if (refused) throw refused;
			} else if (!this.isMemberPrefixed(exposed)) {
				const view = viewCallTarget(exposed, this.toolRoutes);
				if (view) return view;
			}
		}
		if (target) return target;
		// What the virtual server hides, or the name an alias of its replaced, is unknown.
		const named =
			what === "tool"
				? realToolName(this.endpointTools(), exposed)
				: promptOffered(this.endpointOffers(), exposed)
					? exposed
					: null;
		if (named === null) throw unknownName(what, exposed);
		const split = splitNamespacedName(named);
		// An unlisted but well-formed, unshortened name still routes by its prefix, so a
		// member that is briefly unreachable for lists can still be called.
		if (split && this.memberNames().includes(split.server) && named.length < MAX_TOOL_NAME_LENGTH) {
			// Refused here, under the caller's name, what the member's own shaping would refuse under its own.
			if (!this.memberOffers(split.server, what, split.name)) throw unknownName(what, exposed);
			return split;
		}
		throw unknownName(what, exposed);
	}

	/**
	 * The member a resource URI belongs to. The routes are recomputed whenever
	 * the catalog changed, so an exact listing is always consulted before any
	 * template: a member's catch-all template never takes a URI another member lists.
	 */
	async routeUri(uri: string, form: UriForm = "uri"): Promise<ResourceTarget> {
		// A member's `ui://` URI in the aggregate's form names its member (decision 0106): it goes there, as the
		// member wrote it, whether or not the member listed it (a tool's View need not be in `resources/list`).
		const own = splitMemberUiUri(uri);
		if (own && this.memberNames().includes(own.server)) {
			// The virtual server chose its resources by the members' own URIs.
			const hidden = resourceRefusal(this.endpointOffers(), own.uri, form);
			if (hidden) throw unknownResource(uri);
			return own;
		}
		// A URI the virtual server hides (in normal form, however it is spelled) is unknown, whichever member's
		// template would match it; the routes themselves stay exact, as listed.
		const refused = resourceRefusal(this.endpointOffers(), uri, form);
		if (refused) throw refused;
		await this.currentResourceRoutes();
		const route = this.resourceRoutes.route(uri);
		if (route === null) throw unknownResource(uri);
		if ("ambiguous" in route) throw ambiguous(`Resource ${uri}`, route.ambiguous);
		return { server: route.server, uri };
	}

	/** The member whose template a completion of `uri` is for (and the template as it wrote it); else the member the URI itself routes to. */
	async routeTemplate(uri: string): Promise<ResourceTarget> {
		const own = splitMemberUiUri(uri);
		if (own && this.memberNames().includes(own.server)) return this.routeUri(uri, "template");
		await this.currentResourceRoutes();
		const route = this.resourceRoutes.routeTemplate(uri);
		if (route !== null && "ambiguous" in route) throw ambiguous(`Resource template ${uri}`, route.ambiguous);
		return route ? { server: route.server, uri } : await this.routeUri(uri, "template");
	}

	private async currentResourceRoutes(): Promise<void> {
		if (this.resourceRoutesVersion !== this.catalog.version) await this.resourceLists();
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
		const members = this.memberNames();
		const lists = new Map<string, Array<ListItems[K]>>();
		await forEachBounded(members, async (server) => {
			try {
				lists.set(server, await this.decisions.visible(server, kind, await this.catalog.get(server, kind, attempts)));
			} catch (error) {
				console.warn(`member ${server} left out of ${kind}: ${describeError(error)}`);
			}
		});
		return new Map(members.filter((server) => lists.has(server)).map((server) => [server, lists.get(server) ?? []]));
	}

	/** Whether a name starts with a member's prefix (`{server}__`): never a View's own name. */
	private isMemberPrefixed(name: string): boolean {
		const split = splitNamespacedName(name);
		return split !== null && this.memberNames().includes(split.server);
	}

	/** Member names, in endpoint order. */
	private memberNames(): string[] {
		return this.state.binding?.members.map((member) => member.name) ?? [];
	}

	/**
	 * A virtual server's own shaping of its members' tools, over the names its
	 * callers would otherwise see (`member__tool`); undefined: all, as they are.
	 */
	private endpointTools(): EndpointTools | undefined {
		return this.state.binding?.endpointTools ?? undefined;
	}

	/** A virtual server's own choice of its members' prompts (by `member__prompt`) and resources (by URI). */
	private endpointOffers(): OfferShaping {
		const binding = this.state.binding;
		return { prompts: binding?.endpointPrompts, resources: binding?.endpointResources };
	}

	/** Whether the member offers a tool or prompt under its own exposed `name` (its shaping: not hidden, not renamed away). */
	private memberOffers(server: string, what: "tool" | "prompt", name: string): boolean {
		const member = this.members.member(server);
		return what === "tool" ? realToolName(member.tools ?? undefined, name) !== null : promptOffered(member, name);
	}
}

/** Each member's list with `rewrite` applied to every item (as that member's). */
function eachMember<T>(lists: PerServer<T>, rewrite: (server: string, item: T) => T): PerServer<T> {
	return new Map([...lists].map(([server, items]) => [server, items.map((item) => rewrite(server, item))]));
}

/** Each member's list, less what the virtual server leaves out. */
function offeredPerServer<K extends "resources" | "resourceTemplates">(
	offers: OfferShaping,
	kind: K,
	lists: PerServer<ListItems[K]>,
): PerServer<ListItems[K]> {
	if (!shapesList(offers, kind)) return lists;
	return new Map([...lists].map(([server, items]) => [server, offeredItems(offers, kind, [...items])]));
}

function ambiguous(what: string, servers: readonly string[]): GatewayError {
	return new GatewayError(
		"invalid_params",
		`${what} is offered by several servers of this endpoint (${servers.join(", ")}); the gateway does not guess which one to use. Use a server's own endpoint.`,
	);
}
