import type {
	JSONRPCMessage,
	JSONRPCNotification,
	JSONRPCRequest,
	ProgressToken,
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
} from "../../mcp/aggregate.ts";
import { describeError, GatewayError } from "../../mcp/gateway-error.ts";
import { INVALIDATED_BY, type ListItems, type ListKind, PUBLIC_LISTS, type PublicList } from "../../mcp/list-kinds.ts";
import { MAX_TOOL_NAME_LENGTH, splitNamespacedName } from "../../mcp/namespacing.ts";
import { ResourceRoutes } from "../../mcp/resource-routes.ts";
import { once } from "../../primitives/once.ts";
import { forEachBounded } from "./bounded.ts";
import type { Catalog } from "./catalog.ts";
import type { ServerRequests } from "./server-requests.ts";

/** What the router needs from its SessionDO. */
export interface AggregateHost {
	/** Member names, in endpoint order. */
	members(): readonly string[];
	readonly catalog: Catalog;
	/** Forwards a request to a member and streams its reply; calls `done` when the reply has ended. */
	forward(server: string, message: JSONRPCRequest, done: () => void): Promise<Response>;
	/** Sends a notification, or a response to one of its requests, to a member. */
	notify(server: string, message: JSONRPCMessage): Promise<void>;
	/** Members' requests to the client waiting for its answers. */
	readonly requests: ServerRequests;
	/** A request of the gateway's own to a member. */
	request(server: string, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>>;
	/** Sends a notification to the client's open GET streams, if any. */
	emit(message: JSONRPCNotification): void;
}

/**
 * How long a refresh waits for the rest of a burst of list_changed
 * notifications: until none has come for this long (a burst delivered in
 * several batches still shares one refresh), but never longer than
 * REFRESH_MAX_WAIT_MS. A refresh pass fetches each list once (no retry when a
 * notification arrives meanwhile: that only marks the pass dirty), so a member
 * flooding list_changed costs at most one fetch per REFRESH_MAX_WAIT_MS.
 */
const REFRESH_DEBOUNCE_MS = 25;
const REFRESH_MAX_WAIT_MS = 250;

/** A refresh pass fetches each list at most once (see REFRESH_DEBOUNCE_MS). */
const ONE_ATTEMPT = 1;

/**
 * Member notifications a client of an aggregate receives (progress is routed
 * by token, cancellations by request id, log messages are labelled).
 */
const PASSED_THROUGH = new Set(["notifications/resources/updated", "notifications/elicitation/complete"]);

/** What a member asking too much of the client is answered (JSON-RPC internal error). */
const TOO_MANY_PENDING = -32603;

/**
 * Serves an aggregate endpoint: lists are the namespaced union of members'
 * lists, calls route by name prefix (tools, prompts) or by what this session
 * learned from list calls (resource URIs and templates, see
 * `resource-routes.ts`). Members are isolated: a member's notification reaches
 * the client only if it is the member's to send (progress only for tokens of
 * requests sent to that member).
 */
export class AggregateRouter {
	private toolRoutes = new Map<string, RouteTarget>();
	private promptRoutes = new Map<string, RouteTarget>();
	private resourceRoutes = new ResourceRoutes(new Map(), new Map());
	/** The catalog version the resource routes were computed from; -1: never. */
	private resourceRoutesVersion = -1;
	/** Conflicts already reported to the operator, so each is logged once per session. */
	private readonly reportedConflicts = new Set<string>();
	/** Requests forwarded and not yet answered, so a client's cancellation reaches the right member. */
	private readonly inFlight = new Map<RequestId, string>();
	/** Progress tokens of forwarded requests: a member's progress reaches the client only for its own. */
	private readonly progress = new Map<ProgressToken, string>();
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
				return local({ resources: (await this.resourceLists()).resources });
			case "resources/templates/list":
				return local({ resourceTemplates: (await this.resourceLists()).templates });
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
						console.warn(`member ${server} ignored logging/setLevel: ${describeError(error)}`);
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

	/**
	 * Routes a client notification: a cancellation to the member running the
	 * request, progress on a member's request to that member, a change of the
	 * client's roots to every member; anything else stays here.
	 */
	async notify(message: JSONRPCNotification): Promise<void> {
		if (message.method === "notifications/cancelled") {
			const requestId = (message.params as { requestId?: RequestId } | undefined)?.requestId;
			const server = requestId === undefined ? undefined : this.inFlight.get(requestId);
			if (server) await this.host.notify(server, message);
			return;
		}
		if (message.method === "notifications/progress") {
			const routed = this.host.requests.progress(message);
			if (routed) await this.host.notify(routed.server, routed.message);
			return;
		}
		if (message.method === "notifications/roots/list_changed") {
			await forEachBounded(this.host.members(), async (server) => {
				await this.host.notify(server, message).catch((error: unknown) => {
					console.warn(`member ${server} not told of the client's roots change: ${describeError(error)}`);
				});
			});
		}
	}

	/**
	 * The client's answer to a member's request: to that member under its own
	 * id. One the session never sent (or no longer waits for) changes nothing.
	 */
	async clientResponse(message: JSONRPCMessage): Promise<void> {
		const routed = this.host.requests.answer(message);
		if (!routed) {
			const id = "id" in message ? JSON.stringify(message.id).slice(0, 80) : "none";
			console.warn(`client response with id ${id} ignored: no member request of this session is waiting for it`);
			return;
		}
		await this.host.notify(routed.server, routed.message);
	}

	/**
	 * Anything a member sends besides its response to a forwarded request (on
	 * that reply, `call` naming the client stream, or on the member's
	 * listening stream, `call` null): what the client gets, or null.
	 */
	memberMessage(server: string, message: JSONRPCMessage, call: string | null): JSONRPCMessage | null {
		if ("method" in message) {
			if (!("id" in message)) return this.memberNotification(server, message);
			const request = this.host.requests.toClient(server, message, call);
			if (request) return request;
			console.warn(`member ${server}: request ${message.method} to the client refused: too many are waiting`);
			this.host
				.notify(server, {
					jsonrpc: "2.0",
					id: message.id,
					error: {
						code: TOO_MANY_PENDING,
						message:
							"The gateway refused this request: too many requests to the client are waiting for answers in this session.",
					},
				})
				.catch((error: unknown) => console.warn(`member ${server}: refusal not delivered: ${describeError(error)}`));
			return null;
		}
		console.warn(`member ${server}: dropped a response to another request; it is not the member's to send`);
		return null;
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
			this.invalidate(server, kinds);
			return null;
		}
		if (message.method === "notifications/progress") {
			const token = (message.params as { progressToken?: ProgressToken } | undefined)?.progressToken;
			return token !== undefined && this.progress.get(token) === server ? message : null;
		}
		if (message.method === "notifications/cancelled") return this.host.requests.cancelled(server, message);
		if (message.method === "notifications/message") {
			// Which member logged it: the client sees `<server>` or `<server>/<logger>` as the logger.
			const logger = message.params?.logger;
			const label = typeof logger === "string" && logger !== "" ? `${server}/${logger}` : server;
			return { ...message, params: { ...message.params, logger: label } };
		}
		return PASSED_THROUGH.has(message.method) ? message : null;
	}

	/** A member's upstream session was replaced: all its lists are refetched, and the client told of real changes. */
	memberReset(server: string): void {
		this.host.catalog.forget(server);
		for (const list of Object.keys(PUBLIC_LISTS) as PublicList[]) this.refresh(list);
	}

	/** Whether a list refresh is running (its outcome may be a list_changed for the client). */
	get refreshing(): boolean {
		return this.refreshes.size > 0;
	}

	/** Waits for pending list refreshes (tests, and a clean shutdown). */
	async settled(): Promise<void> {
		while (this.refreshes.size > 0) await Promise.all([...this.refreshes.values()].map((r) => r.running));
	}

	private invalidate(server: string, kinds: readonly ListKind[]): void {
		this.host.catalog.invalidate(server, kinds);
		for (const [list, spec] of Object.entries(PUBLIC_LISTS) as [PublicList, (typeof PUBLIC_LISTS)[PublicList]][]) {
			if (spec.kinds.some((kind) => kinds.includes(kind))) this.refresh(list);
		}
	}

	/**
	 * Recomputes one public list and notifies the client when it differs from
	 * what the client last saw. A burst of invalidations while a refresh runs
	 * causes one more refresh, not one per notification. A pass makes one
	 * attempt per list: a list invalidated while it is fetched is not fetched
	 * again in the same pass, the next pass (one window later) does it.
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
				// Notifications of a burst arrive over several reads: wait until they stop, so they share this refresh.
				let waited = 0;
				do {
					state.dirty = false;
					await new Promise((resolve) => setTimeout(resolve, REFRESH_DEBOUNCE_MS));
					waited += REFRESH_DEBOUNCE_MS;
				} while (state.dirty && waited < REFRESH_MAX_WAIT_MS);
				state.dirty = false;
				const kinds = PUBLIC_LISTS[list].kinds;
				const before = kinds.map((kind) => this.published.get(kind));
				if (list === "tools") await this.tools(ONE_ATTEMPT);
				else if (list === "prompts") await this.prompts(ONE_ATTEMPT);
				else await this.resourceLists(ONE_ATTEMPT);
				// Only a list the client has seen can have changed for it.
				const changed = kinds.some((kind, i) => before[i] !== undefined && this.published.get(kind) !== before[i]);
				if (changed) this.host.emit({ jsonrpc: "2.0", method: PUBLIC_LISTS[list].notification });
			} while (state.dirty);
		})()
			.catch((error: unknown) => console.warn(`refreshing ${list} failed: ${describeError(error)}`))
			.finally(() => this.refreshes.delete(list));
		this.refreshes.set(list, state);
	}

	/**
	 * Forwards a request to a member, remembering it (and its progress token)
	 * until its reply ends, so cancellations and progress find the right member.
	 * Entries are removed however the forward ends.
	 */
	private async forward(server: string, message: JSONRPCRequest, done: () => void): Promise<Response> {
		const token = message.params?._meta?.progressToken;
		if (token !== undefined) {
			const holder = this.progress.get(token);
			if (holder !== undefined) {
				throw new GatewayError(
					"invalid_params",
					"Invalid params: this progress token is already used by a running request; use a new token per request.",
				);
			}
			this.progress.set(token, server);
		}
		this.inFlight.set(message.id, server);
		const release = once(() => {
			if (this.inFlight.get(message.id) === server) this.inFlight.delete(message.id);
			if (token !== undefined) this.progress.delete(token);
			done();
		});
		try {
			return await this.host.forward(server, message, release);
		} catch (error) {
			release();
			throw error;
		}
	}

	private async tools(attempts?: number): Promise<Tool[]> {
		const { items, routes } = aggregateNamed(await this.collect("tools", attempts));
		this.toolRoutes = routes;
		this.published.set("tools", JSON.stringify(items));
		return items;
	}

	private async prompts(attempts?: number): Promise<Prompt[]> {
		const { items, routes } = aggregateNamed(await this.collect("prompts", attempts));
		this.promptRoutes = routes;
		this.published.set("prompts", JSON.stringify(items));
		return items;
	}

	/** Resources and templates together: both decide where a URI routes. */
	private async resourceLists(attempts?: number): Promise<{ resources: Resource[]; templates: ResourceTemplate[] }> {
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
				lists.set(server, await this.host.catalog.get(server, kind, attempts));
			} catch (error) {
				console.warn(`member ${server} left out of ${kind}: ${describeError(error)}`);
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

	/**
	 * The member a resource URI belongs to. The routes are recomputed whenever
	 * the catalog changed, so an exact listing is always consulted before any
	 * template: a member's catch-all template never takes a URI another member lists.
	 */
	private async routeUri(uri: string): Promise<string> {
		if (this.resourceRoutesVersion !== this.host.catalog.version) await this.resourceLists();
		const route = this.resourceRoutes.route(uri);
		if (route === null) {
			throw new GatewayError("resource_not_found", `Resource not found: ${uri} is not offered by this endpoint.`);
		}
		if ("ambiguous" in route) throw ambiguous(`Resource ${uri}`, route.ambiguous);
		return route.server;
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
			if (this.resourceRoutesVersion !== this.host.catalog.version) await this.resourceLists();
			const route = this.resourceRoutes.routeTemplate(uri);
			if (route !== null && "ambiguous" in route) throw ambiguous(`Resource template ${uri}`, route.ambiguous);
			return this.forward(route?.server ?? (await this.routeUri(uri)), message, done);
		}
		throw new GatewayError(
			"invalid_params",
			"Invalid params: completion/complete needs a ref of type ref/prompt or ref/resource.",
		);
	}
}

function ambiguous(what: string, servers: readonly string[]): GatewayError {
	return new GatewayError(
		"invalid_params",
		`${what} is offered by several servers of this endpoint (${servers.join(", ")}); the gateway does not guess which one to use. Use a server's own endpoint.`,
	);
}
