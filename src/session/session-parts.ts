import { UpstreamTasks } from "./2025-11-25/upstream-tasks.ts";
import { type BridgedSession, ModernBridge } from "./2026-07-28/bridge.ts";
import { ModernSession, type ModernSessionOwner } from "./2026-07-28/modern-session.ts";
import { ActivityMeter } from "./activity-meter.ts";
import { AggregateRouter } from "./aggregate/aggregate-router.ts";
import { Breaker } from "./aggregate/breaker.ts";
import { Catalog } from "./aggregate/catalog.ts";
import { MemberLists } from "./aggregate/member-lists.ts";
import { MemberSessions } from "./aggregate/member-sessions.ts";
import { ServerRequests } from "./aggregate/server-requests.ts";
import { ClientMessages, type SessionAccess } from "./client-messages.ts";
import { SessionDecisions } from "./session-decisions.ts";
import { type SessionEnder, SessionLifecycle } from "./session-lifecycle.ts";
import type { SessionState } from "./session-state.ts";
import { SessionStore } from "./session-store.ts";
import { ClientStreams } from "./streams/client-streams.ts";
import { EventBuffer } from "./streams/event-buffer.ts";
import { Listening } from "./streams/listening.ts";
import { HeldTasks, type TaskSession } from "./tasks/held-tasks.ts";
import { UpstreamCalls } from "./upstream-calls.ts";
import { UpstreamPool } from "./upstream-pool.ts";

/** What the parts ask of the session that holds them: to end it, and to take messages as its client's. */
export type SessionOwner = SessionAccess & SessionEnder & TaskSession & BridgedSession & ModernSessionOwner;

/** The concerns a session is made of, each in its own module, built on the ones before it. */
export interface SessionParts {
	/** How long the object has been kept active (every RPC, and each call until its reply has ended). */
	readonly activity: ActivityMeter;
	/** The binding in storage, and the alarm (counted). */
	readonly store: SessionStore;
	/** Connections to the members. */
	readonly pool: UpstreamPool;
	/** The session's recent stream events, for resumption. */
	readonly buffer: EventBuffer;
	/** The session's SSE streams to its client. */
	readonly streams: ClientStreams;
	/** Members' requests to the client waiting for its answers (aggregate sessions). */
	readonly requests: ServerRequests;
	/** Upstream sessions: opened on need, retired once, reopened on a new configuration. */
	readonly members: MemberSessions;
	/** Members' lists, single-flight and generation-fenced. */
	readonly catalog: Catalog;
	/** Forwarded requests, at most once, with their failures answered exactly. */
	readonly calls: UpstreamCalls;
	/** Aggregate endpoints: lists, routing, member notifications. */
	readonly router: AggregateRouter;
	/** Activity, idle expiry, rechecks with the registry, maximum age. */
	readonly lifecycle: SessionLifecycle;
	/** Listening windows the edge Worker carries. */
	readonly listening: Listening;
	/** Calls held as tasks: run past their client, their outcomes kept in storage. */
	readonly tasks: HeldTasks;
	/** Tasks upstreams hold themselves (2025-11-25 tools listed with task support), passed through under the gateway's ids. */
	readonly upstreamTasks: UpstreamTasks;
	/** A client's messages: in-flight count, recheck, and where each goes. */
	readonly messages: ClientMessages;
	/** Serves 2026-07-28 clients from this 2025 session: the rounds of their calls, and the session itself. */
	readonly bridge: ModernBridge;
	readonly modernSession: ModernSession;
}

/**
 * Builds a session's parts, each on the ones it needs, in the order they
 * need each other; wiring lives here, so the Durable Object is only its RPC
 * surface and the session (session.ts) its opening, requests and end.
 */
export function sessionParts(state: SessionState, owner: SessionOwner): SessionParts {
	const { settings } = state;
	const clock = () => state.clock;
	const activity = new ActivityMeter(clock);
	const store = new SessionStore(state.storage);
	const pool = new UpstreamPool(
		state.env,
		settings,
		() => state.caller(),
		(promise) => state.waitUntil(promise),
	);
	const breaker = new Breaker(clock);
	const buffer = new EventBuffer(state.storage, settings.eventBuffer, clock);
	const streams = new ClientStreams(buffer, { retryMs: settings.sseRetryMs, primes: () => state.primesStreams() });
	const requests = new ServerRequests({
		max: settings.maxPendingClientRequests,
		ttlMs: settings.upstreamTimeoutMs,
		clock,
	});
	const members = new MemberSessions(state, store, pool, breaker);
	const lists = new MemberLists(members, pool);
	const catalog = new Catalog(lists);
	const decisions = new SessionDecisions(state, members, pool, catalog, lists);
	const calls = new UpstreamCalls(state, pool, members, breaker, decisions);
	const router = new AggregateRouter(state, catalog, decisions, members, calls, streams, requests);
	const lifecycle = new SessionLifecycle(state, store, members, pool, owner);
	const listening = new Listening(state, streams, router, members, lifecycle);
	const tasks = new HeldTasks(state, store, lifecycle, calls, owner);
	calls.approvals.watch((requestId, sentence) => tasks.approvalWait(requestId, sentence));
	const upstreamTasks = new UpstreamTasks(state, members, router, calls, catalog, () => decisions.guards());
	const messages = new ClientMessages(
		state,
		owner,
		lifecycle,
		activity,
		members,
		calls,
		router,
		decisions,
		tasks,
		upstreamTasks,
	);
	const bridge = new ModernBridge(state, owner);
	const modernSession = new ModernSession(state, owner, bridge, tasks);
	// The two links against the build order: the router keeps the lists of the members it is built on,
	// and the lifecycle keeps the session for the tasks built on it.
	members.heardBy(router);
	lifecycle.holdsFor(tasks);
	return {
		activity,
		store,
		pool,
		buffer,
		streams,
		requests,
		members,
		catalog,
		calls,
		router,
		lifecycle,
		listening,
		tasks,
		upstreamTasks,
		messages,
		bridge,
		modernSession,
	};
}
