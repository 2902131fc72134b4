import type { JSONRPCRequest, RequestId, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Settings } from "../config.ts";
import type { CredentialCaller } from "../credentials/credentials-for.ts";
import type { Env } from "../env.ts";
import { shapeList } from "../governance/decision.ts";
import { type DecisionSource, decideListFor, decidesListFor } from "../governance/decision-inputs.ts";
import { type PinContext, watchedToolsReply } from "../governance/listed-tools.ts";
import { promptOffered } from "../governance/offer-shaping.ts";
import { registryRecorder } from "../governance/pin-records.ts";
import { policyPrincipal } from "../governance/policies.ts";
import { loadPolicies } from "../governance/policy-cache.ts";
import { endpointToolView, exposedToolName, realToolName } from "../governance/tool-shaping.ts";
import { describeError } from "../mcp/gateway-error.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import { splitNamespacedName } from "../mcp/namespacing.ts";
import { SSE_HEADERS } from "../mcp/sse.ts";
import { kvRegistryReader } from "../registry/registry-reader.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import { AggregateRouter } from "./aggregate/aggregate-router.ts";
import { Breaker } from "./aggregate/breaker.ts";
import { Catalog } from "./aggregate/catalog.ts";
import type { ReplyRoute } from "./aggregate/member-reply.ts";
import { MemberSessions } from "./aggregate/member-sessions.ts";
import { ServerRequests } from "./aggregate/server-requests.ts";
import type { Member } from "./binding.ts";
import { mayHaveRun } from "./call-failures.ts";
import { type LifecycleHost, SessionLifecycle } from "./session-lifecycle.ts";
import { SessionStore } from "./session-store.ts";
import { ClientStreams } from "./streams/client-streams.ts";
import { EventBuffer } from "./streams/event-buffer.ts";
import { Listening } from "./streams/listening.ts";
import { HeldTasks } from "./tasks/held-tasks.ts";
import { holdsTasksFor, statusNotification, withTaskSupport } from "./tasks/legacy-task-wire.ts";
import { UpstreamTasks } from "./tasks/upstream-tasks.ts";
import { UpstreamCalls } from "./upstream-calls.ts";
import { UpstreamPool } from "./upstream-pool.ts";

/** The concerns a SessionDO is made of, each in its own module. */
export interface SessionParts {
	readonly settings: Settings;
	/** Whether the governance decision, not the upstream, makes what the caller gets of this list of `member`'s. */
	decidesList(member: Member, kind: ListKind): Promise<boolean>;
	/** A transparent tools/list reply passed on as it came, its tools checked against the pins beside the client. */
	watched(member: Member, request: JSONRPCRequest, reply: Response): Response;
	/** What of a member's shaped list the caller may see now (the governance decision; see decision.ts). */
	visible<K extends ListKind>(server: string, kind: K, items: Array<ListItems[K]>): Promise<Array<ListItems[K]>>;
	/** The binding in storage, and the alarm (counted). */
	readonly store: SessionStore;
	/** Activity, idle expiry, rechecks with the registry, maximum age. */
	readonly lifecycle: SessionLifecycle;
	/** Connections to the members. */
	readonly pool: UpstreamPool;
	/** Upstream sessions: opened on need, retired once, reopened on a new configuration. */
	readonly members: MemberSessions;
	/** Reconnect backoff and circuit breaker per member. */
	readonly breaker: Breaker;
	/** Forwarded requests, at most once, with their failures answered exactly. */
	readonly calls: UpstreamCalls;
	/** Members' lists, single-flight and generation-fenced. */
	readonly catalog: Catalog;
	/** Aggregate endpoints: lists, routing, member notifications. */
	readonly router: AggregateRouter;
	/** The session's recent stream events, for resumption. */
	readonly buffer: EventBuffer;
	/** The session's SSE streams to its client (aggregate sessions). */
	readonly streams: ClientStreams;
	/** Members' requests to the client waiting for its answers (aggregate sessions). */
	readonly requests: ServerRequests;
	/** Listening windows the edge Worker carries. */
	readonly listening: Listening;
	/** Calls held as tasks: run past their client, their outcomes kept in storage. */
	readonly tasks: HeldTasks;
	/** Tasks upstreams hold themselves (2025-11-25 tools listed with task support), passed through under the gateway's ids. */
	readonly upstreamTasks: UpstreamTasks;
	/** Whether the session's client declared task support, so the session holds tasks for it (2025-11-25 wire). */
	holdsTasks(): boolean;
}

/**
 * What the parts need from the Durable Object that holds them: what the
 * lifecycle needs of it (the swappable clock, timers and registry, the
 * binding, the session's end), plus its state and env.
 */
export interface PartsHost
	extends Pick<
		LifecycleHost,
		"settings" | "clock" | "timers" | "registry" | "current" | "replace" | "end" | "drained"
	> {
	readonly ctx: DurableObjectState;
	readonly env: Env;
	/** Who the session's requests are for now (members' credentials). */
	readonly calling: () => CredentialCaller | null;
	/** Runs a request the session makes of itself (a held task's call) through its request path. */
	readonly run: (message: JSONRPCRequest) => Promise<Response>;
}

/**
 * Builds a session's parts and wires them to each other. Wiring lives here,
 * so the Durable Object itself is only its RPC surface and its end.
 */
export function sessionParts(host: PartsHost): SessionParts {
	const { ctx, env, settings } = host;
	const store = new SessionStore(ctx.storage);
	const pool = new UpstreamPool(env, settings, host.calling, (promise) => ctx.waitUntil(promise));
	const breaker = new Breaker(host.clock);
	const buffer = new EventBuffer(ctx.storage, settings.eventBuffer, host.clock);
	const streams = new ClientStreams(buffer, {
		retryMs: settings.sseRetryMs,
		primes: () => primingExpected(host.current()?.protocolVersion),
	});
	const requests = new ServerRequests({
		max: settings.maxPendingClientRequests,
		ttlMs: settings.upstreamTimeoutMs,
		clock: host.clock,
	});
	const state = { current: host.current, replace: host.replace };
	const aggregate = () => host.current()?.mode === "aggregate";

	const catalog = new Catalog((server, kind) => fetchList(server, kind));
	const policyReader = kvRegistryReader(env.REGISTRY_KV, settings.kvCacheTtlSeconds);
	/** Each member's tools as its upstream last listed them (before shaping), for pinning. */
	const rawTools = new Map<string, Tool[]>();
	const pinContext: PinContext = {
		reader: policyReader,
		registry: registryRecorder(env),
		ttlMs: settings.endpointCacheTtlMs,
		waitUntil: (promise) => ctx.waitUntil(promise),
	};
	/** What the governance decision reads in this session: its catalog, its caller and its clock (see decision-inputs.ts). */
	const decisions: DecisionSource = {
		policies: () => loadPolicies(policyReader, settings.endpointCacheTtlMs),
		asker: () => {
			const binding = host.current();
			return {
				principal: policyPrincipal(
					binding?.keyId ?? "",
					binding?.caller?.caller.identity ?? null,
					binding?.caller?.caller.keyName ?? null,
				),
				virtualServer: binding?.endpointCheck.kind === "virtual" ? binding.endpointCheck.name : null,
				endpointTools: binding?.endpointTools ?? undefined,
				now: host.clock().now(),
			};
		},
		tools: async (member) => {
			const shaped = await catalog.get(member.name, "tools").catch((error: unknown) => {
				console.warn(
					`member ${member.name}: its tools are unknown to the decision on a call (${describeError(error)})`,
				);
				return [];
			});
			return { shaped, upstream: rawTools.get(member.name) ?? [] };
		},
		pins: pinContext,
		telemetry: telemetryFor(env),
	};
	/** A member's (shaped) tool as the session's endpoint presents it: a virtual server's overrides applied. */
	const onEndpoint = (server: string, name: string, annotations: Tool["annotations"]) =>
		endpointToolView(host.current()?.endpointTools ?? undefined, server, name, annotations);
	/** What of a member's shaped list this caller may see: tools the pins hold or the policies hide are left out. */
	const visible = async <K extends ListKind>(server: string, kind: K, items: Array<ListItems[K]>) => {
		const listed = await decideListFor(decisions, members.member(server), kind, items, rawTools.get(server) ?? []);
		if (kind !== "tools") return listed;
		// Every tools list a session serves passes here: a client it holds tasks for sees which tools it may call as tasks.
		// Tools lists hold tools (parsed with the SDK's schema by `listAll`).
		return (holdsTasks() ? (listed as Tool[]).map(withTaskSupport) : listed) as Array<ListItems[K]>;
	};
	const holdsTasks = () => holdsTasksFor(host.current()?.clientCapabilities);
	const watched = (member: Member, request: JSONRPCRequest, reply: Response) =>
		watchedToolsReply(pinContext, member, request, reply, pool.connection(member).maxReplyBytes);
	const lifecycle = new SessionLifecycle({
		...state,
		settings,
		store,
		clock: host.clock,
		timers: host.timers,
		registry: host.registry,
		end: host.end,
		configChanged: (changed) => members.configChanged(changed),
		drained: host.drained,
		wakeBy: () => tasks.nextExpiry(),
		holdsUntil: () => tasks.lastExpiry(),
	});
	const members: MemberSessions = new MemberSessions({
		...state,
		store,
		pool,
		catalog,
		breaker,
		waitUntil: (promise) => ctx.waitUntil(promise),
		// A member's configuration changed: nothing of the session keeps talking to its old URL
		// (listening windows end by the next recheck, and resume on the new configuration).
		memberReset: (server) => {
			if (aggregate()) router.memberReset(server);
			else catalog.forget(server);
		},
	});
	const calls = new UpstreamCalls({
		breaker,
		connection: (member) => pool.connection(member),
		session: (member) => members.session(member),
		retire: (member, session) => members.retire(member, session),
		isReadOnlyTool: async (member, name) => {
			// `name` is the upstream's; the catalog holds the shaped tools, annotations the operator added included,
			// and a virtual server's operator may add theirs over them.
			const exposed = exposedToolName(member.tools ?? undefined, name);
			return (await catalog.get(member.name, "tools")).some(
				(tool) =>
					tool.name === exposed && onEndpoint(member.name, exposed, tool.annotations).annotations.readOnlyHint === true,
			);
		},
		replyRoute: (member) => (aggregate() ? replyRoute(member) : undefined),
		timers: host.timers,
		clientCapabilities: () => host.current()?.clientCapabilities,
		decisions,
	});
	const router: AggregateRouter = new AggregateRouter({
		members: () => host.current()?.members.map((member) => member.name) ?? [],
		catalog,
		visible,
		endpointTools: () => host.current()?.endpointTools ?? undefined,
		endpointOffers: () => {
			const binding = host.current();
			return { prompts: binding?.endpointPrompts, resources: binding?.endpointResources };
		},
		memberOffers: (server, what, name) => {
			const member = members.member(server);
			return what === "tool" ? realToolName(member.tools ?? undefined, name) !== null : promptOffered(member, name);
		},
		forward: (server, message, call) => calls.request(members.member(server), message, call),
		notify: async (server, message) => {
			await calls.notify(members.member(server), message);
		},
		requests,
		request: async (server, method, params) => {
			const member = members.member(server);
			return pool.connection(member).request(await members.session(member), method, params);
		},
		emit: (message) => streams.listening()?.send(message),
		timers: host.timers,
		disclosure: () => host.current()?.disclosure,
		holdsTasks: () => holdsTasks(),
	});
	const listening = new Listening({
		settings,
		streams,
		router,
		members,
		clock: host.clock,
		current: host.current,
		untilRecheck: (binding) => lifecycle.untilRecheck(binding),
	});

	const tasks: HeldTasks = new HeldTasks({
		settings,
		store,
		clock: host.clock,
		timers: host.timers,
		place: ctx.id.toString(),
		run: host.run,
		extendDeadline: (requestId, ms) => calls.extendDeadline(requestId, ms),
		cancelUpstream: (requestId, reason) => cancelUpstream(requestId, reason),
		mayHaveRun: (tool, what) => {
			const binding = host.current();
			const routed = binding?.mode === "aggregate" ? splitNamespacedName(tool) : null;
			const server = routed?.server ?? binding?.members[0]?.name ?? "the upstream";
			return mayHaveRun({ name: server }, { method: "tools/call", params: { name: routed?.name ?? tool } }, what);
		},
		changed: (task) => {
			if (holdsTasks()) streams.listening()?.send(statusNotification(task));
		},
		expiresBy: (at) => lifecycle.wakeAt(at),
		waitUntil: (promise) => ctx.waitUntil(promise),
	});

	/**
	 * Tells the upstream running `requestId` to stop, as a client's
	 * `notifications/cancelled` would (it ends the wait for the reply too).
	 * Reads the binding synchronously, so it still works as a session ends.
	 */
	function cancelUpstream(requestId: RequestId, reason: string): Promise<void> {
		const binding = host.current();
		if (!binding) return Promise.resolve();
		const cancelled = { jsonrpc: "2.0" as const, method: "notifications/cancelled", params: { requestId, reason } };
		if (binding.mode === "aggregate") return router.notify(cancelled);
		return calls.notify(members.sole(binding), cancelled).then((response) => response.body?.cancel());
	}

	/**
	 * How an aggregate member's reply reaches the client: on a resumable
	 * stream of its own, carrying the response, the member's progress and log
	 * messages, and its requests to the client under gateway-minted ids.
	 */
	function replyRoute(member: Member): ReplyRoute {
		return {
			open: async () => {
				const stream = await streams.open("p");
				const response = new Response(stream.connect(streams.priming(stream)), { headers: SSE_HEADERS });
				return { stream, response };
			},
			route: (message, stream) => router.memberMessage(member.name, message, stream.id),
			reading: (task, stream) => {
				// The call goes on if the client's connection drops: its result waits in the buffer.
				ctx.waitUntil(task.finally(() => requests.callEnded(stream.id)));
			},
		};
	}

	/**
	 * Fetches a whole list from a member. list_changed notifications seen on
	 * the way go through the router (invalidation and refresh).
	 */
	async function fetchList<K extends ListKind>(server: string, kind: K): Promise<Array<ListItems[K]>> {
		const member = members.member(server);
		// A member that does not offer this list has an empty one.
		const items = await pool.connection(member).listOffered(await members.session(member), kind, (notification) => {
			router.memberNotification(server, notification);
		});
		// The upstream's own definitions, for pinning (what changed upstream, whatever the shaping made of it).
		if (kind === "tools") rawTools.set(server, items as Tool[]);
		// The session keeps, routes by and compares what the operator offers, as callers see it (see decision.ts).
		return shapeList(member, kind, items);
	}

	const upstreamTasks = new UpstreamTasks({
		secret: settings.sessionSecret,
		place: ctx.id.toString(),
		maxReplyBytes: settings.maxReplyBytes,
		current: host.current,
		route: async (exposed) => {
			const binding = host.current();
			if (!binding) return null;
			if (binding.mode === "transparent") return { member: members.sole(binding), name: exposed };
			const target = await router.routeTool(exposed);
			return { member: members.member(target.server), name: target.name };
		},
		tools: (member) => catalog.get(member.name, "tools"),
		forward: (member, message, call) =>
			host.current()?.mode === "aggregate"
				? router.forwardTo(member.name, message, call)
				: calls.request(member, message, call),
	});

	return {
		settings,
		decidesList: async (member, kind) => decidesListFor(decisions, member, kind),
		watched,
		visible,
		store,
		lifecycle,
		pool,
		members,
		breaker,
		calls,
		catalog,
		router,
		buffer,
		streams,
		requests,
		listening,
		tasks,
		upstreamTasks,
		holdsTasks,
	};
}

/** Priming events (an id and no data) came with the 2025-11-25 transport; older clients may not expect them. */
function primingExpected(version: string | undefined): boolean {
	return version !== undefined && version >= "2025-11-25";
}
