import type { JSONRPCRequest, RequestId, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { Settings } from "../config.ts";
import type { CredentialCaller } from "../credentials/credentials-for.ts";
import type { Env } from "../env.ts";
import { checkListed, type PinContext, watchedToolsReply } from "../governance/listed-tools.ts";
import { offeredItems, promptOffered } from "../governance/offer-shaping.ts";
import { logPinVerdict, registryRecorder } from "../governance/pin-records.ts";
import { DEFAULT_PINNING, heldToolSentence } from "../governance/pinning.ts";
import { loadPolicies } from "../governance/policy-cache.ts";
import { callRefusal, governs, policyPrincipal, type ToolGate, visibleTools } from "../governance/tool-gate.ts";
import { endpointToolView, exposedToolName, realToolName, shapeTools } from "../governance/tool-shaping.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import { splitNamespacedName } from "../mcp/namespacing.ts";
import { SSE_HEADERS } from "../mcp/sse.ts";
import { kvRegistryReader } from "../registry/registry-reader.ts";
import { GATEWAY_ATTRIBUTES, instrumentsOf } from "../telemetry/instruments.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import { AggregateRouter } from "./aggregate/aggregate-router.ts";
import { Breaker } from "./aggregate/breaker.ts";
import { Catalog } from "./aggregate/catalog.ts";
import type { ReplyRoute } from "./aggregate/member-reply.ts";
import { MemberSessions } from "./aggregate/member-sessions.ts";
import { ServerRequests } from "./aggregate/server-requests.ts";
import type { Member } from "./binding.ts";
import { HeldToolRefusal, mayHaveRun } from "./call-failures.ts";
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
	/** The policies and the session's caller, now (the one decision on tools; see tool-gate.ts). */
	gate(): Promise<ToolGate>;
	/** A transparent tools/list reply passed on as it came, its tools checked against the pins beside the client. */
	watched(member: Member, request: JSONRPCRequest, reply: Response): Response;
	/** What of a member's shaped list the caller may see now. */
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
	/**
	 * How each of a member's tools stands against its pinned definition, by
	 * its upstream name. The first list of a server ever seen is recorded as
	 * approved (trust on first use, in the background); under `block` a new or
	 * changed definition is held, under `warn` served and logged.
	 * `listed`: a list is being served (the registry hears of it); else a call is checked.
	 */
	const pinned = (member: Member, listed: boolean) =>
		checkListed(pinContext, member, { tools: rawTools.get(member.name) ?? [], complete: listed });
	/** The policies and who the session is for, now: one decision for its lists and calls. */
	const gate = async (): Promise<ToolGate> => {
		const binding = host.current();
		const keyId = binding?.keyId ?? "";
		return {
			policies: await loadPolicies(policyReader, settings.endpointCacheTtlMs),
			principal: policyPrincipal(
				keyId,
				binding?.caller?.caller.identity ?? null,
				binding?.caller?.caller.keyName ?? null,
			),
			virtualServer: binding?.endpointCheck.kind === "virtual" ? binding.endpointCheck.name : null,
			now: host.clock().now(),
		};
	};
	/** A member's (shaped) tool as the session's endpoint presents it: a virtual server's overrides applied. */
	const onEndpoint = (server: string, name: string, annotations: Tool["annotations"]) =>
		endpointToolView(host.current()?.endpointTools ?? undefined, server, name, annotations);
	/** What of a member's shaped list this caller may see: tools the policies hide are left out. */
	const visible = async <K extends ListKind>(server: string, kind: K, items: Array<ListItems[K]>) => {
		if (kind !== "tools") return items;
		const member = members.member(server);
		const shaping = member.tools ?? undefined;
		// Tools lists hold tools (parsed with the SDK's schema by `listAll`).
		const tools = items as Tool[];
		const realOf = (tool: Tool) => realToolName(shaping, tool.name) ?? tool.name;
		const mode = member.pinning ?? DEFAULT_PINNING;
		const check = async () => {
			const verdictOf = await pinned(member, true);
			return tools.filter((tool) => {
				const verdict = verdictOf(realOf(tool));
				if (verdict) logPinVerdict(server, mode, realOf(tool), verdict);
				return verdict === null || verdict.served;
			});
		};
		// Under `block` the list waits for the pins; under `warn` nothing is held, so the check (its log
		// line, the first list's record) runs beside the answer and adds nothing to it.
		if (mode !== "block")
			ctx.waitUntil(check().catch((error: unknown) => console.warn(`pins of ${server}: ${describeError(error)}`)));
		const [served, now] = await Promise.all([mode === "block" ? check() : Promise.resolve(tools), gate()]);
		const listed = visibleTools(now, server, served, (tool) => ({
			...onEndpoint(server, tool.name, tool.annotations),
			realName: realOf(tool),
		}));
		// Every list a session serves passes here: a client it holds tasks for sees which tools it may call as tasks.
		return (holdsTasks() ? listed.map(withTaskSupport) : listed) as Array<ListItems[K]>;
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
		callRefusal: async (member, exposed, real, args) => {
			if ((member.pinning ?? DEFAULT_PINNING) === "block") {
				// A held definition is refused on call as it is left out of lists; the upstream's list is needed to know.
				if (!rawTools.has(member.name)) await catalog.get(member.name, "tools").catch(() => []);
				const verdict = (await pinned(member, false))(real);
				if (verdict && !verdict.served) {
					const instruments = instrumentsOf(telemetryFor(env));
					instruments.toolsHeld.add(1);
					instruments.refusals.add(1, { [GATEWAY_ATTRIBUTES.refusalKind]: "pinning" });
					return new HeldToolRefusal("invalid_params", heldToolSentence(exposed, verdict), { server: member.name });
				}
			}
			const now = await gate();
			// Without a policy for this server nothing is asked of it (its list included): calls cost what they did.
			if (!governs(now.policies, member.name)) return null;
			const listed = await catalog.get(member.name, "tools").catch((error: unknown) => {
				console.warn(`member ${member.name}: tool annotations unknown for a policy (${describeError(error)})`);
				return [];
			});
			const tool = listed.find((candidate) => candidate.name === exposed);
			const refused = callRefusal(
				now,
				member.name,
				{ ...onEndpoint(member.name, exposed, tool?.annotations), realName: real },
				args,
			);
			if (refused) instrumentsOf(telemetryFor(env)).refusals.add(1, { [GATEWAY_ATTRIBUTES.refusalKind]: "policy" });
			return refused;
		},
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
		forward: (server, message, done) => calls.request(members.member(server), message, done),
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
		try {
			const items = await pool.connection(member).listAll(await members.session(member), kind, (notification) => {
				router.memberNotification(server, notification);
			});
			// The session keeps, routes by and compares what the operator offers of prompts and resources.
			if (kind !== "tools") return offeredItems(member, kind, items);
			// The upstream's own definitions, for pinning (what changed upstream, whatever the shaping made of it).
			rawTools.set(server, items as Tool[]);
			// The session keeps, routes by and compares the tools as callers see them (the operator's shaping).
			return shapedList(member, items);
		} catch (error) {
			// A member that does not offer this list has an empty one.
			if (error instanceof GatewayError && error.upstreamCode === -32601) return [];
			throw error;
		}
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
		forward: (member, message, done) =>
			host.current()?.mode === "aggregate"
				? router.forwardTo(member.name, message, done)
				: calls.request(member, message, done),
	});

	return {
		settings,
		gate,
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

/** A member's tool list as its operator shaped it (the catalog holds only this view). */
function shapedList<K extends ListKind>(member: Member, items: Array<ListItems[K]>): Array<ListItems[K]> {
	// Tools lists hold tools: `listAll` parsed them with the SDK's Tool schema.
	return shapeTools(`upstream ${member.name}`, member.tools ?? undefined, items as Tool[]) as Array<ListItems[K]>;
}

/** Priming events (an id and no data) came with the 2025-11-25 transport; older clients may not expect them. */
function primingExpected(version: string | undefined): boolean {
	return version !== undefined && version >= "2025-11-25";
}
