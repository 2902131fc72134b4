import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import { headerValue } from "../../mcp/2026-07-28/header-value.ts";
import type { Envelope } from "../../mcp/2026-07-28/modern-request.ts";
import {
	declaresTasks,
	type ModernTaskRequest,
	taskIdOf,
	tasksCapabilityMissing,
	unknownTask,
	withTasksExtension,
} from "../../mcp/2026-07-28/tasks-extension.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { mapReplyMessages, mapReplyTaskIds } from "../../mcp/reply-messages.ts";
import { type Member, openUpstreamTaskId, parseTaskId, upstreamTaskSealer } from "../../session/session-do.ts";
import type { UpstreamTarget } from "../../upstream/upstream-target.ts";
import type { McpContext } from "../request-context.ts";
import { requireSessionSecret, sessionObjectAt } from "../session-routing.ts";
import { forwardModern, modernTarget, upstreamFailureAnswer } from "./forward.ts";
import type { ModernPlan } from "./routes.ts";

/**
 * `tasks/get`, `tasks/update` and `tasks/cancel` (SEP-2663): refused with
 * -32021 unless the request declares the tasks extension (nothing is read or
 * woken), then routed by the task's id: a task a session holds goes to the
 * Durable Object its id names (which knows it only for the principal and
 * endpoint that made it), a task an upstream holds to that server under the
 * upstream's id; any other id is unknown (-32602) and changes nothing.
 */
export async function serveTaskMethod(
	c: McpContext,
	request: ModernTaskRequest,
	envelope: Envelope,
	plan: ModernPlan,
): Promise<Response> {
	const scope = c.get("scope");
	const { message } = request;
	if (!declaresTasks(envelope.clientCapabilities))
		return tasksCapabilityMissing(message.method, message.id).toResponse();
	let taskId: string;
	try {
		taskId = taskIdOf(request);
	} catch (error) {
		if (error instanceof GatewayError) return error.toResponse();
		throw error;
	}
	const id = parseTaskId(taskId);
	if (id.kind === "held") {
		// An id whose place names no object of ours is as unknown as any other (and wakes nothing).
		const stub = sessionObjectAt(c.env, id.place);
		if (stub === null) return unknownTask(taskId, message.id).toResponse();
		return stub.modernTask(scope, request);
	}
	const held = await openUpstreamTaskId(requireSessionSecret(c.get("settings")), scope, taskId);
	// Only a transparent endpoint passes an upstream's tasks on; its one member must be the server named.
	const member = held && plan.mode === "transparent" ? plan.members.find((m) => m.name === held.server) : undefined;
	if (!held || !member) return unknownTask(taskId, message.id).toResponse();
	const target = modernTarget(c, member);
	const upstream = toUpstreamTask(request, held.upstreamTaskId);
	try {
		const reply = await forwardModern(target, c.req.raw, upstream.body, upstream.message, upstream.headers);
		// The client's id goes back wherever the upstream's appears.
		return await mapReplyTaskIds(reply, target.maxReplyBytes, async () => taskId);
	} catch (error) {
		return upstreamFailureAnswer(message, error, envelope.clientCapabilities);
	}
}

/**
 * A `tools/call` from a client that declares the tasks extension, to a
 * 2026-07-28 server that holds tasks itself: sent as it came (the upstream
 * decides whether to make a task), and a task it makes reaches the client
 * under the gateway's id for it. `rewritten`: the routing headers of a body
 * the governance decision renamed (see forwardModern).
 */
export async function upstreamHeldCall(
	c: McpContext,
	member: Member,
	target: UpstreamTarget,
	body: string,
	message: JSONRPCRequest,
	rewritten: Record<string, string> = {},
): Promise<Response> {
	const seal = upstreamTaskSealer(requireSessionSecret(c.get("settings")), c.get("scope"), { server: member.name });
	const reply = await forwardModern(target, c.req.raw, body, message, rewritten);
	return mapReplyTaskIds(reply, target.maxReplyBytes, seal);
}

/** A `server/discover` reply with the tasks extension among the capabilities: the gateway holds tasks for this server. */
export function offeringTasks(reply: Response, maxReplyBytes: number): Promise<Response> {
	return mapReplyMessages(reply, maxReplyBytes, async (message) => {
		if (!("result" in message)) return message;
		const capabilities = message.result.capabilities;
		if (typeof capabilities !== "object" || capabilities === null) return message;
		return { ...message, result: { ...message.result, capabilities: withTasksExtension({ ...capabilities }) } };
	});
}

/** The request as the upstream must see it: its own task id, in the body and in `Mcp-Name`. */
function toUpstreamTask(
	request: ModernTaskRequest,
	upstreamTaskId: string,
): { message: JSONRPCRequest; body: string; headers: Record<string, string> } {
	const { message } = request;
	const upstream: JSONRPCRequest = { ...message, params: { ...message.params, taskId: upstreamTaskId } };
	return { message: upstream, body: JSON.stringify(upstream), headers: { "mcp-name": headerValue(upstreamTaskId) } };
}
