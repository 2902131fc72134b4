import { LATEST_PROTOCOL_VERSION, LoggingLevelSchema } from "@modelcontextprotocol/sdk/types.js";
import { withoutEnvelope } from "../../mcp/2026-07-28/modern-request.ts";
import { acknowledgedFilter, type SubscriptionFilter } from "../../mcp/2026-07-28/subscription-filter.ts";
import { declaresTasks, withoutTasksExtension } from "../../mcp/2026-07-28/tasks-extension.ts";
import type { SessionRequest } from "../../mcp/client-message.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import {
	INITIALIZE,
	LOGGING_SET_LEVEL,
	RESOURCES_SUBSCRIBE,
	SERVER_DISCOVER,
	SUBSCRIPTIONS_LISTEN,
	TOOLS_CALL,
} from "../../mcp/methods.ts";
import { randomToken } from "../../primitives/crypto.ts";
import { keySessions, openAdmitted } from "../../registry/key-sessions-do.ts";
import { type SessionBinding, type SessionScope, scopeMatches } from "../binding.ts";
import type { OpenSessionInput } from "../session-open.ts";
import { notFound } from "../session-responses.ts";
import type { ModernSessionInput, OpenSessionResult, SessionMessage } from "../session-rpc.ts";
import type { SessionState } from "../session-state.ts";
import type { HeldTasks } from "../tasks/held-tasks.ts";
import type { ModernBridge } from "./bridge.ts";
import { discoverReply } from "./discover.ts";
import { promotedCall } from "./task-wire.ts";

/** What serving 2026-07-28 clients needs of the 2025 session the object holds. */
export interface ModernSessionOwner {
	/** The binding, loaded from storage on first use (null: none here). */
	load(): Promise<SessionBinding | null>;
	openSession(input: OpenSessionInput): Promise<OpenSessionResult>;
	handleClientMessage(scope: SessionScope, message: SessionMessage): Promise<Response>;
}

/**
 * 2026-07-28 clients of the 2025 session a SessionDO holds for their key,
 * endpoint and capabilities: the session is opened on first use with the
 * envelope's capabilities and client info (admitted by the key's ledger like
 * any session), `server/discover` is answered from it, a per-request log
 * level becomes `logging/setLevel` once per change, and everything else goes
 * through the bridge.
 */
export class ModernSession {
	/** The first requests of a new session share one open. */
	private opening: Promise<SessionBinding | Response> | null = null;
	/** The log level a client last asked for (sent to the upstreams once per change). */
	private logLevel: string | undefined;

	constructor(
		private readonly state: SessionState,
		private readonly session: ModernSessionOwner,
		private readonly bridge: ModernBridge,
		/** The calls the session holds as tasks. */
		private readonly tasks: HeldTasks,
	) {}

	async request(input: ModernSessionInput): Promise<Response> {
		const binding = await this.ready(input);
		if (binding instanceof Response) return binding;
		const { request, envelope } = input;
		if (request.method === SERVER_DISCOVER) return discoverReply(binding, request.message.id);
		if (envelope.logLevel !== undefined && envelope.logLevel !== this.logLevel) {
			this.logLevel = envelope.logLevel;
			// A level the SDK does not know is one no upstream would take: nothing is sent for it.
			const level = LoggingLevelSchema.safeParse(envelope.logLevel);
			if (level.success) {
				await this.send(input.scope, {
					kind: "request",
					method: LOGGING_SET_LEVEL,
					message: { jsonrpc: "2.0", id: gatewayId(), method: LOGGING_SET_LEVEL, params: { level: level.data } },
				});
			}
		}
		// The extension lets the server answer any call as a task: the session holds each one, and a call
		// still running after the promotion delay is answered as a task (the client polls it) (SEP-2663).
		if (request.method === TOOLS_CALL && declaresTasks(envelope.clientCapabilities)) {
			return promotedCall(this.tasks, withoutEnvelope(request), this.state.settings.tasks.promoteAfterMs);
		}
		return this.bridge.request(request, { keyId: input.scope.keyId, endpoint: input.scope.endpoint });
	}

	/**
	 * A `subscriptions/listen`: the session is opened if needed and the
	 * upstreams are subscribed to the resources it names; the stream itself is
	 * carried by the edge over the session's listening windows (as a 2025
	 * client's GET is), so listening costs the object nothing between windows.
	 * Returns what the gateway can honour.
	 */
	async listen(input: ModernSessionInput): Promise<{ acknowledged: SubscriptionFilter } | Response> {
		const binding = await this.ready(input);
		if (binding instanceof Response) return binding;
		const { request } = input;
		const wanted = request.method === SUBSCRIPTIONS_LISTEN ? request.message.params.notifications : {};
		const acknowledged = acknowledgedFilter(wanted, binding.server?.capabilities ?? {});
		for (const uri of acknowledged.resourceSubscriptions ?? []) {
			await this.send(input.scope, {
				kind: "request",
				method: RESOURCES_SUBSCRIBE,
				message: { jsonrpc: "2.0", id: gatewayId(), method: RESOURCES_SUBSCRIBE, params: { uri } },
			});
		}
		return { acknowledged };
	}

	/** The session ended: the next request starts afresh. */
	clear(): void {
		this.logLevel = undefined;
	}

	/** A request of the gateway's own into the session; its answer is not needed. */
	private async send(scope: SessionScope, request: SessionRequest): Promise<void> {
		await (await this.session.handleClientMessage(scope, request)).body?.cancel();
	}

	private async ready(input: ModernSessionInput): Promise<SessionBinding | Response> {
		const binding = await this.session.load();
		if (binding) return scopeMatches(binding, input.scope) ? binding : notFound();
		this.opening ??= this.open(input).finally(() => {
			this.opening = null;
		});
		return this.opening;
	}

	/** Opens the 2025 session, after the key's ledger admits it; a session that does not open gives its place back. */
	private async open(input: ModernSessionInput): Promise<SessionBinding | Response> {
		const { keyId } = input.scope;
		const admission = {
			ledger: keySessions(this.state.env, keyId),
			place: this.state.place,
			keyId,
			cap: input.cap,
			refusal: { id: input.request.message.id },
		};
		const answer = await openAdmitted<SessionBinding | Response>(admission, async () => {
			const { envelope } = input;
			const params = {
				protocolVersion: LATEST_PROTOCOL_VERSION,
				// The session holds tasks itself: its upstreams are never offered the tasks extension.
				capabilities: withoutTasksExtension(envelope.clientCapabilities),
				clientInfo: envelope.clientInfo,
			};
			const opened = await this.session.openSession({
				...input,
				request: { jsonrpc: "2.0", id: "gw-open", method: INITIALIZE, params },
				params,
			});
			const binding = this.state.binding ?? null;
			if (opened.opened && binding) return { opened: true, result: binding };
			const error =
				"error" in opened.reply ? opened.reply.error : { code: -32603, message: "The session did not open." };
			return { opened: false, result: Response.json({ jsonrpc: "2.0", id: input.request.message.id, error }) };
		});
		return answer instanceof GatewayError ? answer.toResponse() : answer;
	}
}

/** An id for a request of the gateway's own: never one a client's could be mistaken for. */
function gatewayId(): string {
	return `gw-${randomToken(8)}`;
}
