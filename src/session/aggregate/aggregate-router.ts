import type { JSONRPCMessage, JSONRPCNotification, Result } from "@modelcontextprotocol/sdk/types.js";
import type { RouteTarget } from "../../mcp/aggregate.ts";
import type { ClientNotification, ClientResponse, SessionRequest, ToolCall } from "../../mcp/client-message.ts";
import { describeError, GatewayError } from "../../mcp/gateway-error.ts";
import { progressTokenOf } from "../../mcp/jsonrpc.ts";
import { INVALIDATED_BY, type ListKind, PUBLIC_LISTS, type PublicList } from "../../mcp/list-kinds.ts";
import { withResourceUri, withToolName } from "../../mcp/message-accessors.ts";
import {
	COMPLETION_COMPLETE,
	LOGGING_SET_LEVEL,
	NOTIFICATIONS_CANCELLED,
	NOTIFICATIONS_ELICITATION_COMPLETE,
	NOTIFICATIONS_MESSAGE,
	NOTIFICATIONS_PROGRESS,
	NOTIFICATIONS_RESOURCES_UPDATED,
	NOTIFICATIONS_ROOTS_LIST_CHANGED,
	NOTIFICATIONS_TASKS_STATUS,
	PING,
	PROMPTS_GET,
	PROMPTS_LIST,
	RESOURCES_LIST,
	RESOURCES_READ,
	RESOURCES_SUBSCRIBE,
	RESOURCES_TEMPLATES_LIST,
	RESOURCES_UNSUBSCRIBE,
	TOOLS_CALL,
	TOOLS_LIST,
} from "../../mcp/methods.ts";
import { SSE_HEADERS } from "../../mcp/sse.ts";
import { memberUiUri, withMemberUiContents } from "../../mcp/ui-uris.ts";
import type { RunningCall } from "../running-call.ts";
import type { SessionDecisions } from "../session-decisions.ts";
import type { SessionState } from "../session-state.ts";
import type { ClientStreams } from "../streams/client-streams.ts";
import { parseTaskId } from "../tasks/task-ids.ts";
import type { UpstreamCalls } from "../upstream-calls.ts";
import { AggregateLists } from "./aggregate-lists.ts";
import { forEachBounded } from "./bounded.ts";
import type { Catalog } from "./catalog.ts";
import { ForwardedRequests } from "./forwarded-requests.ts";
import { ListRefresh } from "./list-refresh.ts";
import type { ReplyRoute } from "./member-reply.ts";
import type { MemberListener, MemberSessions } from "./member-sessions.ts";
import type { ServerRequests } from "./server-requests.ts";
import { ToolDisclosure } from "./tool-disclosure.ts";

/**
 * Member notifications a client of an aggregate receives (progress is routed
 * by token, cancellations by request id, log messages are labelled).
 */
const PASSED_THROUGH: ReadonlySet<string> = new Set([
	NOTIFICATIONS_RESOURCES_UPDATED,
	NOTIFICATIONS_ELICITATION_COMPLETE,
]);

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
export class AggregateRouter implements MemberListener {
	private readonly lists: AggregateLists;
	private readonly forwarded = new ForwardedRequests();
	private readonly refreshes: ListRefresh;
	private readonly disclosure: ToolDisclosure;

	constructor(
		private readonly state: SessionState,
		private readonly catalog: Catalog,
		decisions: SessionDecisions,
		private readonly members: MemberSessions,
		private readonly calls: UpstreamCalls,
		/** The client's streams: members' replies are read onto them, list changes sent on the listening one. */
		private readonly streams: ClientStreams,
		/** Members' requests to the client waiting for its answers. */
		private readonly requests: ServerRequests,
	) {
		this.lists = new AggregateLists(state, catalog, decisions, members);
		this.disclosure = new ToolDisclosure({
			disclosure: () => state.binding?.disclosure,
			holdsTasks: () => state.holdsTasks(),
			callable: async () => {
				const tools = await this.lists.tools();
				return { tools, generation: this.lists.toolsGeneration };
			},
		});
		this.refreshes = new ListRefresh(
			() => state.timers,
			async (list) => {
				if (await this.lists.refreshed(list)) {
					streams.listening()?.send({ jsonrpc: "2.0", method: PUBLIC_LISTS[list].notification });
				}
			},
		);
	}

	/** Answers one client request of `call`. */
	async handle(request: SessionRequest, call: RunningCall): Promise<Response> {
		const { message } = request;
		const local = (result: Record<string, unknown>) =>
			call.answered(Response.json({ jsonrpc: "2.0", id: message.id, result }));
		switch (request.method) {
			case PING:
				return local({});
			case TOOLS_LIST:
				return local({ tools: this.disclosure.searching ? await this.disclosure.list() : await this.lists.tools() });
			case PROMPTS_LIST:
				return local({ prompts: await this.lists.prompts() });
			case RESOURCES_LIST:
				return local({ resources: (await this.lists.resourceLists()).resources });
			case RESOURCES_TEMPLATES_LIST:
				return local({ resourceTemplates: (await this.lists.resourceLists()).templates });
			case TOOLS_CALL: {
				if (this.disclosure.isSearch(request)) return local({ ...(await this.disclosure.search(request)) });
				const target = await this.lists.routeName("tool", request.message.params.name);
				return this.forward(target.server, withToolName(request, target.name), call);
			}
			case PROMPTS_GET: {
				const target = await this.lists.routeName("prompt", request.message.params.name);
				const params = { ...request.message.params, name: target.name };
				return this.forward(target.server, { ...request, message: { ...request.message, params } }, call);
			}
			case RESOURCES_READ:
			case RESOURCES_SUBSCRIBE:
			case RESOURCES_UNSUBSCRIBE: {
				// Sent with the URI the member knows; a read's contents come back under the aggregate's URIs.
				const target = await this.lists.routeUri(request.message.params.uri);
				const sent = withResourceUri(request, target.uri);
				if (request.method !== RESOURCES_READ) return this.forward(target.server, sent, call);
				return this.forward(target.server, sent, call, (result) => withMemberUiContents(target.server, result));
			}
			case COMPLETION_COMPLETE:
				return this.complete(request, call);
			case LOGGING_SET_LEVEL: {
				const params = request.message.params;
				await forEachBounded(this.memberNames(), async (server) => {
					await this.members.request(server, LOGGING_SET_LEVEL, params).catch((error: unknown) => {
						console.warn(`member ${server} ignored logging/setLevel: ${describeError(error)}`);
					});
				});
				return local({});
			}
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
	async notify(notification: ClientNotification): Promise<void> {
		switch (notification.method) {
			case NOTIFICATIONS_CANCELLED: {
				const { requestId } = notification.message.params;
				const server = requestId === undefined ? undefined : this.forwarded.serverOf(requestId);
				if (server) await this.notifyMember(server, notification);
				return;
			}
			case NOTIFICATIONS_PROGRESS: {
				const routed = this.requests.progress(notification.message);
				if (routed) await this.notifyMember(routed.server, routed.message);
				return;
			}
			case NOTIFICATIONS_ROOTS_LIST_CHANGED:
				await forEachBounded(this.memberNames(), async (server) => {
					await this.notifyMember(server, notification).catch((error: unknown) => {
						console.warn(`member ${server} not told of the client's roots change: ${describeError(error)}`);
					});
				});
				return;
			default:
				return;
		}
	}

	/**
	 * The client's answer to a member's request: to that member under its own
	 * id. One the session never sent (or no longer waits for) changes nothing.
	 */
	async clientResponse(response: ClientResponse): Promise<void> {
		const routed = this.requests.answer(response);
		if (!routed) {
			const { id: answered } = response.message;
			const id = answered === undefined ? "none" : JSON.stringify(answered).slice(0, 80);
			console.warn(`client response with id ${id} ignored: no member request of this session is waiting for it`);
			return;
		}
		await this.notifyMember(routed.server, routed.message);
	}

	/**
	 * Anything a member sends besides its response to a forwarded request (on
	 * that reply, `call` naming the client stream, or on the member's
	 * listening stream, `call` null): what the client gets, or null.
	 */
	memberMessage(server: string, message: JSONRPCMessage, call: string | null): JSONRPCMessage | null {
		if ("method" in message) {
			if (!("id" in message)) return this.memberNotification(server, message);
			const request = this.requests.toClient(server, message, call);
			if (request) return request;
			console.warn(`member ${server}: request ${message.method} to the client refused: too many are waiting`);
			this.notifyMember(server, {
				kind: "response",
				message: {
					jsonrpc: "2.0",
					id: message.id,
					error: {
						code: TOO_MANY_PENDING,
						message:
							"The gateway refused this request: too many requests to the client are waiting for answers in this session.",
					},
				},
			}).catch((error: unknown) => console.warn(`member ${server}: refusal not delivered: ${describeError(error)}`));
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
		if (message.method === NOTIFICATIONS_PROGRESS) {
			const token = progressTokenOf(message);
			return token !== null && this.forwarded.progressOf(server, token) ? message : null;
		}
		if (message.method === NOTIFICATIONS_CANCELLED) return this.requests.cancelled(server, message);
		if (message.method === NOTIFICATIONS_MESSAGE) {
			// Which member logged it: the client sees `<server>` or `<server>/<logger>` as the logger.
			const logger = message.params?.logger;
			const label = typeof logger === "string" && logger !== "" ? `${server}/${logger}` : server;
			return { ...message, params: { ...message.params, logger: label } };
		}
		if (message.method === NOTIFICATIONS_TASKS_STATUS) {
			// Only under the id the client was given (sealed on the member's GET stream); a raw upstream id means nothing to it.
			const taskId = message.params?.taskId;
			return typeof taskId === "string" && parseTaskId(taskId).kind === "upstream" ? message : null;
		}
		if (message.method === NOTIFICATIONS_RESOURCES_UPDATED) {
			// Under the URI the client subscribed with: a member's `ui://` URIs are in the aggregate's form.
			const uri = message.params?.uri;
			return typeof uri === "string"
				? { ...message, params: { ...message.params, uri: memberUiUri(server, uri) } }
				: message;
		}
		return PASSED_THROUGH.has(message.method) ? message : null;
	}

	/**
	 * A member's upstream session was replaced (a new configuration, a new
	 * credential, a listening stream that found it gone): all its lists are
	 * refetched, and an aggregate's client told of real changes. A transparent
	 * session's lists are refetched on their next use.
	 */
	memberReset(server: string): void {
		this.catalog.forget(server);
		if (!this.state.aggregate) return;
		for (const list of Object.keys(PUBLIC_LISTS) as PublicList[]) this.refreshes.request(list);
	}

	/** A member's upstream session was opened anew or retired: its lists are fetched again on their next use. */
	sessionReplaced(server: string): void {
		this.catalog.forget(server);
	}

	/** Whether a list refresh is running (its outcome may be a list_changed for the client). */
	get refreshing(): boolean {
		return this.refreshes.running;
	}

	/** Waits for pending list refreshes (tests, and a clean shutdown). */
	async settled(): Promise<void> {
		await this.refreshes.settled();
	}

	private invalidate(server: string, kinds: readonly ListKind[]): void {
		this.catalog.invalidate(server, kinds);
		for (const [list, spec] of Object.entries(PUBLIC_LISTS) as [PublicList, (typeof PUBLIC_LISTS)[PublicList]][]) {
			if (spec.kinds.some((kind) => kinds.includes(kind))) this.refreshes.request(list);
		}
	}

	/**
	 * In search mode, the call a client's `call_tool` stands for (see
	 * ToolDisclosure.inner); null for any other request. The session routes it
	 * from the start, as if the client had sent it.
	 */
	innerCall(request: SessionRequest): ToolCall | null {
		return this.disclosure.inner(request);
	}

	/** Whether `request` is the gateway's own `execute_code` of an aggregate in code mode (docs/code-mode.md). */
	isExecute(request: SessionRequest): request is ToolCall {
		return this.disclosure.isExecute(request);
	}

	/** The names of the tools the caller may call now. */
	callableNames(): Promise<string[]> {
		return this.disclosure.callableNames();
	}

	/** Refuses as unknown the call a `call_tool` stands for when its tool is a View's only (see ToolDisclosure). */
	refuseAppOnly(inner: ToolCall): Promise<void> {
		return this.disclosure.refuseAppOnly(inner);
	}

	/** The member a tool the endpoint lists as `exposed` belongs to, and its name there (unknown names throw). */
	routeTool(exposed: string): Promise<RouteTarget> {
		return this.lists.routeName("tool", exposed);
	}

	/** Sends a request to member `server` as it is (a task's request that member's upstream holds). */
	forwardTo(server: string, request: SessionRequest, call: RunningCall): Promise<Response> {
		return this.forward(server, request, call);
	}

	/**
	 * Forwards a request to a member, remembering it (and its progress token)
	 * until its call ends, so cancellations and progress find the right member.
	 * Entries are removed however the call ends.
	 */
	private forward(
		server: string,
		request: SessionRequest,
		call: RunningCall,
		result?: (result: Result) => Result,
	): Promise<Response> {
		this.forwarded.track(server, request.message, call);
		return this.calls.request(this.members.member(server), request, call, this.replyRoute(server, result));
	}

	/**
	 * How a member's reply reaches the client: on a resumable stream of its
	 * own, carrying the response, the member's progress and log messages, and
	 * its requests to the client under gateway-minted ids.
	 */
	private replyRoute(server: string, result?: (result: Result) => Result): ReplyRoute {
		return {
			answer: (response) =>
				result && "result" in response ? { ...response, result: result(response.result) } : response,
			open: async () => {
				const stream = await this.streams.open("p");
				const response = new Response(stream.connect(this.streams.priming(stream)), { headers: SSE_HEADERS });
				return { stream, response };
			},
			route: (message, stream) => this.memberMessage(server, message, stream.id),
			reading: (task, stream) => {
				// The call goes on if the client's connection drops: its result waits in the buffer.
				this.state.waitUntil(task.finally(() => this.requests.callEnded(stream.id)));
			},
		};
	}

	/** Sends a notification, or a response to one of its requests, to a member. */
	private async notifyMember(server: string, message: ClientNotification | ClientResponse): Promise<void> {
		await this.calls.notify(this.members.member(server), message);
	}

	/** Member names, in endpoint order. */
	private memberNames(): string[] {
		return this.state.binding?.members.map((member) => member.name) ?? [];
	}

	private async complete(
		request: Extract<SessionRequest, { method: typeof COMPLETION_COMPLETE }>,
		call: RunningCall,
	): Promise<Response> {
		const { ref } = request.message.params;
		if (ref.type === "ref/prompt") {
			const target = await this.lists.routeName("prompt", ref.name);
			const params = { ...request.message.params, ref: { ...ref, name: target.name } };
			return this.forward(target.server, { ...request, message: { ...request.message, params } }, call);
		}
		const target = await this.lists.routeTemplate(ref.uri);
		const params = { ...request.message.params, ref: { ...ref, uri: target.uri } };
		return this.forward(target.server, { ...request, message: { ...request.message, params } }, call);
	}
}
