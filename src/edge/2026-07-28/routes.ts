import { reachOf, touches } from "../../governance/decision.ts";
import { guardsReach } from "../../governance/guards/applicable-guards.ts";
import { loadGuards } from "../../governance/guards/guard-cache.ts";
import { type PinContext, watchedToolsReply } from "../../governance/listed-tools.ts";
import { registryRecorder } from "../../governance/pin-records.ts";
import { loadPolicies } from "../../governance/policy-cache.ts";
import type { Envelope } from "../../mcp/2026-07-28/modern-request.ts";
import type { SubscriptionFilter } from "../../mcp/2026-07-28/subscription-filter.ts";
import { declaresTasks } from "../../mcp/2026-07-28/tasks-extension.ts";
import {
	SERVER_DISCOVER,
	SUBSCRIPTIONS_LISTEN,
	TASKS_CANCEL,
	TASKS_GET,
	TASKS_UPDATE,
	TOOLS_CALL,
	TOOLS_LIST,
} from "../../mcp/methods.ts";
import type { ClassifiedPost } from "../../mcp/post-classification.ts";
import { stableJson } from "../../mcp/stable-json.ts";
import { sha256Hex } from "../../primitives/crypto.ts";
import type { EndpointCheck, Member, SessionScope } from "../../session/session-do.ts";
import { upstreamEra, upstreamHoldsTasks } from "../../upstream/upstream-era.ts";
import { planEndpoint } from "../endpoint-plan.ts";
import type { McpContext } from "../request-context.ts";
import { cachedResult } from "./cache.ts";
import { forwardModern, modernTarget, upstreamFailureAnswer } from "./forward.ts";
import { type PassOn, serveGoverned, TO_SESSION } from "./governed.ts";
import { modernListenStream } from "./listen.ts";
import { offeringTasks, serveTaskMethod, upstreamHeldCall } from "./tasks.ts";

/** An endpoint as the edge resolved it for this request (`planEndpoint`). */
export interface ModernPlan {
	mode: "transparent" | "aggregate";
	endpointCheck: EndpointCheck;
	members: Member[];
}

/**
 * A 2026-07-28 request, validated. To a 2026-07-28 upstream behind a server
 * endpoint it is served statelessly by the edge, which makes the governance
 * decision itself where the server is governed (`governed.ts`);
 * anything that needs a 2025 session (a 2025 upstream, an aggregate, a
 * call the caller must confirm first) is served by the SessionDO that holds one for this key, endpoint and client
 * capabilities. `body`: the request's body as it goes upstream.
 */
export async function serveModern(
	c: McpContext,
	classified: Extract<ClassifiedPost, { era: "modern" }>,
	body: string,
): Promise<Response> {
	// 2026-07-28 defines no client notification over HTTP; one is accepted and dropped.
	if (classified.kind === "notification") return new Response(null, { status: 202 });
	const resolved = await planEndpoint(c);
	const sole = resolved.members[0];
	const { request, envelope } = classified;
	const { message } = request;
	if (request.method === TASKS_GET || request.method === TASKS_UPDATE || request.method === TASKS_CANCEL) {
		return serveTaskMethod(c, request, envelope, resolved);
	}
	const settings = c.get("settings");
	if (resolved.mode === "transparent" && sole) {
		const reader = c.get("reader");
		// Whether governance touches the server: its shaping and pinning, and the policies, read per isolate as
		// access rules are. A server it touches is still served here, the edge making the session's decision.
		const reach = reachOf(sole, await loadPolicies(reader, settings.endpointCacheTtlMs));
		// A listen filter naming resources the operator may hide is checked resource by resource by a session.
		const listensForHidden = request.method === SUBSCRIPTIONS_LISTEN && reach.resources;
		try {
			const target = modernTarget(c, sole);
			const tasking = request.method === TOOLS_CALL && declaresTasks(envelope.clientCapabilities);
			// A content guard that may apply to the server is run here too, as a session runs it (decision 0114).
			const guarded = guardsReach(await loadGuards(reader, settings.endpointCacheTtlMs), sole.name);
			// A call the client lets become a task goes to the session unless the upstream holds tasks itself, and
			// no guard may read its result: one read later from the upstream's task would pass none (decision 0130).
			const holdsTasks = tasking && !guarded ? await upstreamHoldsTasks(target, sole) : false;
			if (!listensForHidden && (await upstreamEra(target, sole)) === "modern" && tasking === holdsTasks) {
				const pins: PinContext = {
					reader,
					registry: registryRecorder(c.env),
					ttlMs: settings.endpointCacheTtlMs,
					waitUntil: c.get("waitUntil"),
				};
				const passOn: PassOn = async (sent, renamed) => {
					const sentBody = renamed?.body ?? body;
					const rewritten = renamed?.headers ?? {};
					if (tasking) return upstreamHeldCall(c, sole, target, sentBody, sent.message, rewritten);
					return cachedResult(sole, sent.message, envelope, target.maxReplyBytes, async () => {
						const reply = await forwardModern(target, c.req.raw, sentBody, sent.message, rewritten);
						// The gateway holds tasks for a server that does not: its discover says the extension is offered.
						if (sent.method === SERVER_DISCOVER) return offeringTasks(reply, target.maxReplyBytes);
						if (sent.method !== TOOLS_LIST) return reply;
						// Passed on as it came; its tools are recorded and flagged beside it, as a session's are.
						return watchedToolsReply(pins, sole, sent.message, reply, target.maxReplyBytes);
					});
				};
				if (!touches(reach) && !guarded) return await passOn(request);
				const served = await serveGoverned(c, { member: sole, target, request, envelope, reach, pins }, passOn);
				if (served !== TO_SESSION) return served;
			}
		} catch (error) {
			return upstreamFailureAnswer(message, error, envelope.clientCapabilities);
		}
	}
	const scope = c.get("scope");
	const name = await modernSessionName(scope, envelope, c.req.raw.headers.get("x-mcp-servers"));
	const stub = c.env.SESSIONS.get(c.env.SESSIONS.idFromName(name));
	const input = {
		scope,
		...resolved,
		envelope,
		request,
		cap: c.get("principal").key.maxSessions ?? settings.maxSessionsPerKey,
	};
	if (request.method === SUBSCRIPTIONS_LISTEN) {
		const listening = (await stub.modernListen(input)) as { acknowledged: SubscriptionFilter } | Response;
		if (listening instanceof Response) return listening;
		return modernListenStream(c, stub, message, listening.acknowledged);
	}
	return stub.modern(input);
}

/**
 * The SessionDO serving a 2026-07-28 client: one per key, user path,
 * endpoint (with its server selection) and client capabilities, since the
 * 2025 session behind it was opened with those capabilities.
 */
async function modernSessionName(scope: SessionScope, envelope: Envelope, servers: string | null): Promise<string> {
	const parts = [scope.keyId, scope.userPath, scope.endpoint, servers ?? "", stableJson(envelope.clientCapabilities)];
	return `modern:${await sha256Hex(JSON.stringify(parts))}`;
}
