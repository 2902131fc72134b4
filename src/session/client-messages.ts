import type { RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { ClientNotification, SessionMessage, SessionRequest, ToolCall } from "../mcp/client-message.ts";
import { executeArgumentsOf } from "../mcp/code-tools.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { taskAsked } from "../mcp/message-accessors.ts";
import { NOTIFICATIONS_CANCELLED, NOTIFICATIONS_INITIALIZED, TOOLS_LIST } from "../mcp/methods.ts";
import { UnknownToolRefusal } from "../mcp/unknown-offers.ts";
import { withCalledTool, withCallNote } from "../telemetry/tool-call.ts";
import { meetsTasks, routeTaskRequest } from "./2025-11-25/task-requests.ts";
import { answerTaskRequest } from "./2025-11-25/task-wire.ts";
import type { UpstreamTasks } from "./2025-11-25/upstream-tasks.ts";
import type { ActivityMeter } from "./activity-meter.ts";
import type { AggregateRouter } from "./aggregate/aggregate-router.ts";
import type { MemberSessions } from "./aggregate/member-sessions.ts";
import type { Member, SessionBinding, SessionScope } from "./binding.ts";
import { CodePrograms } from "./code-programs.ts";
import { RunningCall } from "./running-call.ts";
import type { SessionDecisions } from "./session-decisions.ts";
import type { SessionLifecycle } from "./session-lifecycle.ts";
import { notFound, renderHttpFailure, renderRpcFailure } from "./session-responses.ts";
import type { SessionState } from "./session-state.ts";
import type { HeldTasks } from "./tasks/held-tasks.ts";
import type { UpstreamCalls } from "./upstream-calls.ts";

/** Requests one session may have running at once; more get 429 (every map keyed by request id stays bounded). */
export const MAX_IN_FLIGHT = 100;

/** Who says whether a message's scope is the session's own (the session: its binding, loaded once). */
export interface SessionAccess {
	/** The binding, when `scope` is the one the session belongs to; null otherwise. */
	authorize(scope: SessionScope): Promise<SessionBinding | null>;
}

/**
 * A client's message in a session it belongs to, parsed once at the edge
 * (`client-message.ts`): a request is let in (up to MAX_IN_FLIGHT at once) as
 * a running call that ends itself (RunningCall), the session is rechecked if
 * due, and the message goes where it belongs — the tasks (only a request that
 * meets them), the one upstream of a transparent session, or an aggregate's
 * router — its reply leaving through the call.
 */
export class ClientMessages {
	private readonly programs: CodePrograms;

	constructor(
		private readonly state: SessionState,
		private readonly access: SessionAccess,
		private readonly lifecycle: SessionLifecycle,
		/** The object's active time: a call keeps it active until its reply has ended, connected client or not. */
		private readonly activity: ActivityMeter,
		private readonly members: MemberSessions,
		private readonly calls: UpstreamCalls,
		private readonly router: AggregateRouter,
		private readonly decisions: SessionDecisions,
		private readonly tasks: HeldTasks,
		private readonly upstreamTasks: UpstreamTasks,
	) {
		this.programs = new CodePrograms(state);
	}

	/** Handles one client message (request, notification or response), if `scope` is the session's own. */
	async handle(scope: SessionScope, input: SessionMessage): Promise<Response> {
		const binding = await this.access.authorize(scope);
		if (!binding) return notFound();
		// The gateway already completed the upstream handshake when the session opened.
		if (input.kind === "notification" && input.method === NOTIFICATIONS_INITIALIZED) {
			return new Response(null, { status: 202 });
		}
		if (input.kind === "request" && this.lifecycle.inFlight >= MAX_IN_FLIGHT) {
			return new GatewayError(
				"too_many_in_flight",
				`Too Many Requests: this session already has ${MAX_IN_FLIGHT} requests running; wait for some to finish.`,
			).toResponse(input.message.id);
		}
		const call = RunningCall.begin(this.lifecycle, this.activity);
		/** The tool a `call_tool` named (search mode): the call is that tool's, and the edge accounts it so. */
		let calledTool: string | null = null;
		try {
			if (!(await this.lifecycle.recheckIfDue(binding))) return call.answered(notFound());
			const aggregate = (this.state.binding ?? binding).mode === "aggregate";
			// In code mode an `execute_code` runs its program here; each inner call comes back in at the top,
			// as a request of this caller's own (docs/code-mode.md).
			if (input.kind === "request" && aggregate && this.router.isExecute(input)) {
				// Asked as a task by a client the session holds tasks for, the program is held as one: the task
				// comes back at once, and the held call re-enters here without `params.task` and runs the program.
				if (taskAsked(input) && this.state.holdsTasks()) {
					// Bad arguments are refused now, as an untasked call's are: no task is held for a program that cannot run.
					executeArgumentsOf(input);
					const held = await answerTaskRequest(this.tasks, input, call);
					if (held) return held;
				}
				const session = {
					send: (inner: ToolCall) => this.handle(scope, inner),
					callableNames: () => this.router.callableNames(),
				};
				return call.leave(await this.programs.run(input, session));
			}
			// In search mode a `call_tool` is, from here on, the call of the tool it names: tasks, shaping,
			// policies, pinning and at-most-once hold for it as for the direct call it stands for.
			const inner = input.kind === "request" && aggregate ? this.router.innerCall(input) : null;
			if (inner) {
				input = inner;
				calledTool = inner.message.params.name;
				// A View's own tool is not the model's to call: refused here, accounted as the unknown tool it named.
				await this.router.refuseAppOnly(inner);
			}
			const reply = await this.route(binding, input, call);
			return call.leave(calledTool === null ? reply : withCalledTool(reply, calledTool));
		} catch (error) {
			call.end();
			if (input.kind !== "request") return renderHttpFailure(error);
			const failure = renderRpcFailure(error, input.message.id);
			// The edge accounts a name the endpoint does not offer as an unknown tool, not as any invalid params.
			const noted =
				error instanceof UnknownToolRefusal
					? withCallNote(failure, input.message.method, { refused: "unknown_tool" })
					: failure;
			return calledTool === null ? noted : withCalledTool(noted, calledTool);
		}
	}

	/**
	 * Tells the upstream running `requestId` to stop, as a client's
	 * `notifications/cancelled` would (it ends the wait for the reply too).
	 * Reads the binding synchronously, so it still works as a session ends.
	 */
	async cancelUpstream(requestId: RequestId, reason: string): Promise<void> {
		const cancelling = this.cancelProgram(requestId, reason);
		if (cancelling !== null) return cancelling;
		const binding = this.state.binding;
		if (!binding) return;
		const cancelled: ClientNotification = {
			kind: "notification",
			method: NOTIFICATIONS_CANCELLED,
			message: { jsonrpc: "2.0", method: NOTIFICATIONS_CANCELLED, params: { requestId, reason } },
		};
		if (binding.mode === "aggregate") return this.router.notify(cancelled);
		const member = this.members.transparentMember(binding);
		await (await this.calls.notify(member, cancelled)).body?.cancel();
	}

	/**
	 * Cancels the program (code mode's `execute_code`) running under
	 * `requestId`: it makes no more inner calls, and those in flight are
	 * cancelled upstream. Null, synchronously, when no program runs under it.
	 */
	private cancelProgram(requestId: RequestId, reason: string): Promise<void> | null {
		const inner = this.programs.cancel(requestId);
		if (inner === null) return null;
		return Promise.all(inner.map((id) => this.cancelUpstream(id, reason))).then(() => undefined);
	}

	/** A client message of a session it belongs to, after the recheck: where it goes, and its reply. */
	private async route(binding: SessionBinding, input: SessionMessage, call: RunningCall): Promise<Response> {
		if (input.kind === "request") return this.routeRequest(binding, input, call);
		// An answer to what a held task's call asked settles that question; it goes on as any answer.
		if (input.kind === "response") await this.tasks.answered(input.message);
		// The answer to a question the session asked on its own behalf (a confirmation) stays here.
		if (input.kind === "response" && this.calls.answers.answer(input.message))
			return new Response(null, { status: 202 });
		const current = this.state.binding ?? binding;
		if (current.mode === "transparent") return this.calls.notify(this.members.transparentMember(current), input);
		// The client cancelling its `execute_code` (code mode) cancels the program, as a held program's task is.
		if (input.kind === "notification" && input.method === NOTIFICATIONS_CANCELLED) {
			const { requestId, reason } = input.message.params;
			const cancelling =
				requestId === undefined ? null : this.cancelProgram(requestId, reason ?? "The client cancelled the program.");
			if (cancelling !== null) {
				await cancelling;
				return new Response(null, { status: 202 });
			}
		}
		if (input.kind === "notification") await this.router.notify(input);
		else await this.router.clientResponse(input);
		return new Response(null, { status: 202 });
	}

	/**
	 * A client request: the tasks first, only if it meets them (decided from
	 * the parsed request: a plain call never does), then the one upstream of a
	 * transparent session or an aggregate's router.
	 */
	private async routeRequest(binding: SessionBinding, request: SessionRequest, call: RunningCall): Promise<Response> {
		let holder: Member | null = null;
		if (meetsTasks(request)) {
			const route = await routeTaskRequest(this.state.holdsTasks(), this.tasks, this.upstreamTasks, request, call);
			if ("answered" in route) return route.answered;
			request = route.request;
			holder = route.holder;
		}
		const current = this.state.binding ?? binding;
		if (current.mode === "aggregate") {
			const reply = await this.router.handle(request, call);
			return holder ? this.taskCreated(holder, reply, call) : reply;
		}
		const member = this.members.transparentMember(current);
		// The list of a server that is shaped, pinned under `block` or governed by a policy is rewritten
		// (and only it): the session answers it from its catalog, shaped, filtered, all in one page.
		const kind = await this.decisions.listAnsweredHere(member, request.message.method);
		if (kind) return call.answered(await this.decisions.answerList(member, kind, request.message.id));
		const reply = await this.calls.request(member, request, call);
		// A list not rewritten reaches the client as it came; its tools are recorded and flagged beside it.
		if (request.method === TOOLS_LIST) {
			return call.carriedOn(reply, this.decisions.watchedToolsReply(member, request.message, reply));
		}
		return holder ? this.taskCreated(holder, reply, call) : reply;
	}

	/** A reply to a call `holder`'s upstream made a task of: its task id the gateway's; the call still ends with the upstream's reply. */
	private async taskCreated(holder: Member, reply: Response, call: RunningCall): Promise<Response> {
		return call.carriedOn(reply, await this.upstreamTasks.created(holder, reply));
	}
}
