import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { SessionRequest } from "../mcp/client-message.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { keySessions } from "../registry/key-sessions-do.ts";
import { instrumentsOf } from "../telemetry/instruments.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import type { InnerCallNote } from "../telemetry/tool-call.ts";
import { statusNotification, withTasksCapability } from "./2025-11-25/task-wire.ts";
import { helloOf } from "./2026-07-28/discover.ts";
import { type SessionBinding, type SessionScope, scopeMatches, scopeOf } from "./binding.ts";
import { accountHeldInnerCalls } from "./held-inner-calls.ts";
import { type OpenSessionInput, openAggregate, openTransparent } from "./session-open.ts";
import { type SessionOwner, type SessionParts, sessionParts } from "./session-parts.ts";
import { asGatewayError, notFound } from "./session-responses.ts";
import type { OpenSessionResult, SessionMessage } from "./session-rpc.ts";
import type { SessionState } from "./session-state.ts";
import type { HeldTask } from "./tasks/held-task.ts";

/**
 * The session a SessionDO holds, apart from its RPC surface: its binding
 * loaded, checked against each request's scope, opened and ended, and the
 * messages that reach it — a client's, and those the session sends as its
 * client (a held task's call, a 2026-07-28 client's request over the bridge).
 * Its parts (session-parts.ts) call back into it through the small
 * interfaces it implements.
 */
export class Session implements SessionOwner {
	readonly parts: SessionParts;
	private loading: Promise<SessionBinding | null> | null = null;

	constructor(private readonly state: SessionState) {
		this.parts = sessionParts(state, this);
	}

	/** The binding, read from storage once per instance (null: no session here). */
	load(): Promise<SessionBinding | null> {
		const { state } = this;
		if (state.binding !== undefined) return Promise.resolve(state.binding);
		this.loading ??= this.parts.store.readBinding().then((binding) => {
			if (state.binding === undefined) {
				state.binding = binding;
				if (binding) this.parts.lifecycle.restored(binding);
			}
			return state.binding;
		});
		return this.loading;
	}

	/** The binding, when `scope` is the one the session belongs to; null otherwise. */
	async authorize(scope: SessionScope): Promise<SessionBinding | null> {
		const binding = await this.load();
		// A request from another key, user path or endpoint learns nothing and changes nothing.
		if (!binding || !scopeMatches(binding, scope)) return null;
		this.state.noteCaller(scope);
		return binding;
	}

	/**
	 * Opens the session: initializes the upstream session(s) and stores the
	 * binding. `opened` is false when a transparent upstream refused (its
	 * JSON-RPC error is the reply) or could not be reached; then nothing was
	 * stored.
	 */
	async openSession(input: OpenSessionInput): Promise<OpenSessionResult> {
		const { state, parts } = this;
		state.noteCaller(input.scope);
		try {
			// A fresh session ID has 192 random bits, so its Durable Object is new: no storage read
			// is needed to know it holds nothing. An instance already holding a session refuses.
			if (state.binding) throw new GatewayError("conflict", "A session with this ID already exists.");
			const opened =
				input.mode === "transparent"
					? await openTransparent(parts.pool, input)
					: await openAggregate(parts.pool, input);
			if (!opened.binding) return { opened: false, reply: opened.reply };
			// The client learns whether the gateway holds tasks for it (never an upstream's own tasks capability).
			const reply = withTasksCapability(opened.reply, input.params.capabilities);
			const now = state.clock.now();
			const binding: SessionBinding = {
				...opened.binding,
				server: helloOf(reply),
				createdAt: now,
				lastActivity: now,
				verifiedAt: now,
			};
			state.binding = binding;
			parts.buffer.startEmpty();
			await parts.store.writeBinding(binding);
			await parts.lifecycle.opened(binding);
			return { opened: true, reply };
		} catch (error) {
			return {
				opened: false,
				reply: { jsonrpc: "2.0", id: input.request.id, error: asGatewayError(error).toJsonRpcError() },
			};
		}
	}

	/** One client message (request, notification or response) into the session, if `scope` is its own. */
	handleClientMessage(scope: SessionScope, input: SessionMessage): Promise<Response> {
		return this.parts.messages.handle(scope, input);
	}

	/** A message into the session as its client's, under the session's own scope (404 where none is). */
	postAsClient(message: SessionMessage): Promise<Response> {
		const binding = this.state.binding;
		if (!binding) return Promise.resolve(notFound());
		return this.handleClientMessage(scopeOf(binding), message);
	}

	/** A held task's call, run as its client's request would run. */
	runAsClient(request: SessionRequest): Promise<Response> {
		return this.postAsClient(request);
	}

	innerCallsRan(within: string, notes: readonly InnerCallNote[], era: "2025" | "2026-07-28"): void {
		accountHeldInnerCalls(this.state, within, notes, era);
	}

	cancelUpstream(requestId: RequestId, reason: string): Promise<void> {
		return this.parts.messages.cancelUpstream(requestId, reason);
	}

	/** A held task changed: a client the session holds tasks for hears of it on its listening stream. */
	taskChanged(task: HeldTask): void {
		if (this.state.holdsTasks()) this.parts.streams.listening()?.send(statusNotification(task));
	}

	/**
	 * Ends the session: forgotten first, so concurrent and later requests get
	 * 404 and nothing writes it back; running calls and streams ended; storage
	 * cleared; the key's place given back; upstream sessions closed, after the
	 * calls still running have drained.
	 */
	async endSession(binding: SessionBinding, reason: string): Promise<void> {
		const { state, parts } = this;
		if (state.binding === null) return;
		console.log(`session ended: ${reason}`);
		this.recordSessionDuration(binding);
		// Before the binding goes: cancelling running tasks upstream needs their upstream sessions.
		parts.tasks.end(reason);
		state.binding = null;
		parts.lifecycle.stop();
		parts.calls.abortAll(reason);
		parts.streams.closeAll();
		parts.buffer.discard();
		parts.requests.clear();
		parts.listening.clear();
		parts.bridge.clear();
		parts.modernSession.clear();
		state.waitUntil(
			keySessions(state.env, binding.keyId)
				.release(state.place)
				.catch((error: unknown) => console.warn(`session place not released: ${describeError(error)}`)),
		);
		await parts.store.clear();
		await parts.lifecycle.closeUpstreams(binding);
	}

	/** The conventions' `mcp.server.session.duration`, from its opening to its end (deleted, expired or revoked). */
	private recordSessionDuration(binding: SessionBinding): void {
		const telemetry = telemetryFor(this.state.env);
		if (!telemetry.enabled) return;
		instrumentsOf(telemetry).serverSessionDuration.record((this.state.clock.now() - binding.createdAt) / 1000, {
			"network.transport": "tcp",
			"network.protocol.name": "http",
		});
	}
}
