import { UriTemplate } from "@modelcontextprotocol/sdk/shared/uriTemplate.js";
import type {
	JSONRPCNotification,
	JSONRPCRequest,
	Prompt,
	RequestId,
	Resource,
	ResourceTemplate,
	Tool,
} from "@modelcontextprotocol/sdk/types.js";
import {
	aggregateNamed,
	aggregateResources,
	aggregateTemplates,
	type PerServer,
	type RouteTarget,
} from "../mcp/aggregate.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { MAX_TOOL_NAME_LENGTH, splitNamespacedName } from "../mcp/namespacing.ts";
import { forEachBounded } from "./bounded.ts";
import { type Catalog, INVALIDATED_BY, type ListKind } from "./catalog.ts";

/** What the router needs from its SessionDO. */
export interface AggregateHost {
	/** Member names, in endpoint order. */
	members(): readonly string[];
	readonly catalog: Catalog;
	/** Forwards a request to a member and streams its reply; calls `done` when the reply has ended. */
	forward(server: string, message: JSONRPCRequest, done: () => void): Promise<Response>;
	/** Sends a notification to a member. */
	notify(server: string, message: JSONRPCNotification): Promise<void>;
	/** A request of the gateway's own to a member. */
	request(server: string, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>>;
	/** Sends a notification to the client's open GET streams, if any. */
	emit(message: JSONRPCNotification): void;
}

/** The lists a client sees, and the notification that says one changed. */
const PUBLIC_LISTS = {
	tools: { kinds: ["tools"], method: "notifications/tools/list_changed" },
	prompts: { kinds: ["prompts"], method: "notifications/prompts/list_changed" },
	resources: { kinds: ["resources", "resourceTemplates"], method: "notifications/resources/list_changed" },
} as const;
type PublicList = keyof typeof PUBLIC_LISTS;

/** How long a refresh waits for the rest of a burst of list_changed notifications. */
const REFRESH_DEBOUNCE_MS = 25;

/** Upstream notifications a client of an aggregate receives as they are. */
const PASSED_THROUGH = new Set(["notifications/resources/updated", "notifications/message", "notifications/progress"]);

/**
 * Serves an aggregate endpoint: lists are the namespaced union of members'
 * lists, calls route by name prefix (tools, prompts) or by what this session
 * learned from list calls (resource URIs and templates).
 */
export class AggregateRouter {
	private toolRoutes = new Map<string, RouteTarget>();
	private promptRoutes = new Map<string, RouteTarget>();
	private resourceRoutes = new Map<string, string>();
	private templateRoutes = new Map<string, string>();
	/** Requests forwarded and not yet answered, so a client's cancellation reaches the right member. */
	private readonly inFlight = new Map<RequestId, string>();
	/** What the client last saw of each list, to tell a real change from a no-op list_changed. */
	private readonly published = new Map<ListKind, string>();
	private readonly refreshes = new Map<PublicList, { running: Promise<void>; dirty: boolean }>();

	constructor(private readonly host: AggregateHost) {}

	/** Answers one client request; `done` is called once the response is complete. */
	async handle(message: JSONRPCRequest, done: () => void): Promise<Response> {
		const local = (result: Record<string, unknown>) => {
			done();
			return Response.json({ jsonrpc: "2.0", id: message.id, result });
		};
		const params = (message.params ?? {}) as Record<string, unknown>;
		switch (message.method) {
			case "ping":
				return local({});
			case "tools/list":
				return local({ tools: await this.tools() });
			case "prompts/list":
				return local({ prompts: await this.prompts() });
			case "resources/list":
				return local({ resources: await this.resources() });
			case "resources/templates/list":
				return local({ resourceTemplates: await this.templates() });
			case "tools/call": {
				const target = await this.routeName("tool", String(params.name ?? ""));
				return this.forward(target.server, { ...message, params: { ...params, name: target.name } }, done);
			}
			case "prompts/get": {
				const target = await this.routeName("prompt", String(params.name ?? ""));
				return this.forward(target.server, { ...message, params: { ...params, name: target.name } }, done);
			}
			case "resources/read":
			case "resources/subscribe":
			case "resources/unsubscribe":
				return this.forward(await this.routeUri(String(params.uri ?? "")), message, done);
			case "completion/complete":
				return this.complete(message, params, done);
			case "logging/setLevel":
				await forEachBounded(this.host.members(), async (server) => {
					await this.host.request(server, "logging/setLevel", params).catch((error: unknown) => {
						console.warn(`member ${server} ignored logging/setLevel: ${describe(error)}`);
					});
				});
				return local({});
			default:
				throw new GatewayError(
					"method_not_found",
					`Method not found: ${message.method} is not offered by this endpoint.`,
				);
		}
	}

	/** Routes a client notification: cancellations to the member holding the request; the rest stay here. */
	async notify(message: JSONRPCNotification): Promise<void> {
		if (message.method !== "notifications/cancelled") return;
		const requestId = (message.params as { requestId?: RequestId } | undefined)?.requestId;
		const server = requestId === undefined ? undefined : this.inFlight.get(requestId);
		if (server) await this.host.notify(server, message);
	}

	/**
	 * A notification from a member (on its GET stream or inside a reply).
	 * list_changed invalidates that member's lists and refreshes the aggregate;
	 * the client hears of it only if its effective list really changed.
	 * Returns the message to pass on to the client, or null.
	 */
	memberNotification(server: string, message: JSONRPCNotification): JSONRPCNotification | null {
		const kinds = INVALIDATED_BY[message.method];
		if (kinds) {
			this.host.catalog.invalidate(server, kinds);
			for (const [list, spec] of Object.entries(PUBLIC_LISTS) as [PublicList, (typeof PUBLIC_LISTS)[PublicList]][]) {
				if (spec.kinds.some((kind) => kinds.includes(kind))) this.refresh(list);
			}
			return null;
		}
		return PASSED_THROUGH.has(message.method) ? message : null;
	}

	/** A member's upstream session was replaced: all its lists are refetched, and the client told of real changes. */
	memberReset(server: string): void {
		this.host.catalog.forget(server);
		for (const list of Object.keys(PUBLIC_LISTS) as PublicList[]) this.refresh(list);
	}

	/** Waits for pending list refreshes (tests, and a clean shutdown). */
	async settled(): Promise<void> {
		while (this.refreshes.size > 0) await Promise.all([...this.refreshes.values()].map((r) => r.running));
	}

	/**
	 * Recomputes one public list and notifies the client when it differs from
	 * what the client last saw. A burst of invalidations while a refresh runs
	 * causes one more refresh, not one per notification.
	 */
	private refresh(list: PublicList): void {
		const current = this.refreshes.get(list);
		if (current) {
			current.dirty = true;
			return;
		}
		const state = { dirty: false, running: Promise.resolve() };
		state.running = (async () => {
			do {
				// Notifications of a burst arrive over several reads: wait a moment so they share this refresh.
				await new Promise((resolve) => setTimeout(resolve, REFRESH_DEBOUNCE_MS));
				state.dirty = false;
				const kinds = PUBLIC_LISTS[list].kinds;
				const before = kinds.map((kind) => this.published.get(kind));
				if (list === "tools") await this.tools();
				else if (list === "prompts") await this.prompts();
				else await Promise.all([this.resources(), this.templates()]);
				// Only a list the client has seen can have changed for it.
				const changed = kinds.some((kind, i) => before[i] !== undefined && this.published.get(kind) !== before[i]);
				if (changed) this.host.emit({ jsonrpc: "2.0", method: PUBLIC_LISTS[list].method });
			} while (state.dirty);
		})()
			.catch((error: unknown) => console.warn(`refreshing ${list} failed: ${describe(error)}`))
			.finally(() => this.refreshes.delete(list));
		this.refreshes.set(list, state);
	}

	private async forward(server: string, message: JSONRPCRequest, done: () => void): Promise<Response> {
		this.inFlight.set(message.id, server);
		return this.host.forward(server, message, () => {
			this.inFlight.delete(message.id);
			done();
		});
	}

	private async tools(): Promise<Tool[]> {
		const { items, routes } = aggregateNamed(await this.collect<Tool>("tools"));
		this.toolRoutes = routes;
		this.published.set("tools", JSON.stringify(items));
		return items;
	}

	private async prompts(): Promise<Prompt[]> {
		const { items, routes } = aggregateNamed(await this.collect<Prompt>("prompts"));
		this.promptRoutes = routes;
		this.published.set("prompts", JSON.stringify(items));
		return items;
	}

	private async resources(): Promise<Resource[]> {
		const { items, routes } = aggregateResources(await this.collect<Resource>("resources"));
		this.resourceRoutes = routes;
		this.published.set("resources", JSON.stringify(items));
		return items;
	}

	private async templates(): Promise<ResourceTemplate[]> {
		const { items, routes } = aggregateTemplates(await this.collect<ResourceTemplate>("resourceTemplates"));
		this.templateRoutes = routes;
		this.published.set("resourceTemplates", JSON.stringify(items));
		return items;
	}

	/**
	 * Every member's list, in member order. A member that fails is left out with
	 * a logged reason instead of failing the whole list; it is asked again next
	 * time, so its entries reappear once it answers.
	 */
	private async collect<T>(kind: ListKind): Promise<PerServer<T>> {
		const members = this.host.members();
		const lists = new Map<string, T[]>();
		await forEachBounded(members, async (server) => {
			try {
				lists.set(server, (await this.host.catalog.get(server, kind)) as T[]);
			} catch (error) {
				console.warn(`member ${server} left out of ${kind}: ${describe(error)}`);
			}
		});
		return new Map(members.filter((server) => lists.has(server)).map((server) => [server, lists.get(server) ?? []]));
	}

	private async routeName(what: "tool" | "prompt", exposed: string): Promise<RouteTarget> {
		const routes = () => (what === "tool" ? this.toolRoutes : this.promptRoutes);
		let target = routes().get(exposed);
		if (!target) {
			// Not listed in this session yet (or the DO restarted): learn the list, then route.
			if (what === "tool") await this.tools();
			else await this.prompts();
			target = routes().get(exposed);
		}
		if (target) return target;
		const split = splitNamespacedName(exposed);
		// An unlisted but well-formed, unshortened name still routes by its prefix, so a
		// member that is briefly unreachable for lists can still be called.
		if (split && this.host.members().includes(split.server) && exposed.length < MAX_TOOL_NAME_LENGTH) return split;
		throw new GatewayError("invalid_params", `Unknown ${what}: '${exposed}' is not offered by this endpoint.`);
	}

	private async routeUri(uri: string): Promise<string> {
		let server = this.findUri(uri);
		if (!server) {
			await Promise.all([this.resources(), this.templates()]);
			server = this.findUri(uri);
		}
		if (server) return server;
		throw new GatewayError("resource_not_found", `Resource not found: ${uri} is not offered by this endpoint.`);
	}

	private findUri(uri: string): string | undefined {
		const exact = this.resourceRoutes.get(uri);
		if (exact) return exact;
		for (const [template, server] of this.templateRoutes) {
			if (new UriTemplate(template).match(uri)) return server;
		}
		return undefined;
	}

	private async complete(
		message: JSONRPCRequest,
		params: Record<string, unknown>,
		done: () => void,
	): Promise<Response> {
		const ref = (params.ref ?? {}) as { type?: string; name?: string; uri?: string };
		if (ref.type === "ref/prompt") {
			const target = await this.routeName("prompt", String(ref.name ?? ""));
			return this.forward(
				target.server,
				{ ...message, params: { ...params, ref: { ...ref, name: target.name } } },
				done,
			);
		}
		if (ref.type === "ref/resource") {
			const uri = String(ref.uri ?? "");
			if (!this.templateRoutes.has(uri)) await this.templates();
			const server = this.templateRoutes.get(uri) ?? (await this.routeUri(uri));
			return this.forward(server, message, done);
		}
		throw new GatewayError(
			"invalid_params",
			"Invalid params: completion/complete needs a ref of type ref/prompt or ref/resource.",
		);
	}
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}
