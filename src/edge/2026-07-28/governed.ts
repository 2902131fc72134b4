import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { decidesList, type Reach, shapeList } from "../../governance/decision.ts";
import { callNoteOf, type DecisionSource, decideCallFor, decideListFor } from "../../governance/decision-inputs.ts";
import { loadGuards } from "../../governance/guards/guard-cache.ts";
import { guardedReply } from "../../governance/guards/guarded-call.ts";
import type { PinContext } from "../../governance/listed-tools.ts";
import { policyPrincipal } from "../../governance/policies.ts";
import { loadPolicies } from "../../governance/policy-cache.ts";
import { decodeHeaderValue, headerValue } from "../../mcp/2026-07-28/header-value.ts";
import type { Envelope } from "../../mcp/2026-07-28/modern-request.ts";
import { modernReply, requestName } from "../../mcp/2026-07-28/modern-results.ts";
import type { SessionRequest } from "../../mcp/client-message.ts";
import { describeError } from "../../mcp/gateway-error.ts";
import { LIST_KIND_OF_METHOD, LIST_KINDS, type ListItems, type ListKind } from "../../mcp/list-kinds.ts";
import { FIRST_MODERN_VERSION } from "../../mcp/protocol-version.ts";
import type { Member } from "../../session/session-do.ts";
import { telemetryFor } from "../../telemetry/telemetry.ts";
import { withCallNote } from "../../telemetry/tool-call.ts";
import { UpstreamConnection } from "../../upstream/upstream-connection.ts";
import type { UpstreamTarget } from "../../upstream/upstream-target.ts";
import { postReferencedWebhook } from "../../upstream/webhook-post.ts";
import type { McpContext } from "../request-context.ts";

/**
 * A 2026-07-28 request to a 2026-07-28 server that governance touches,
 * decided at the edge (invariant "2026-07-28 to 2026-07-28 costs no Durable
 * Object"): the same decision a session makes (`decision.ts`), from the same
 * per-isolate caches of compiled policies and pins and the server's shaping
 * in its endpoint record. A list the decision makes is fetched whole from the
 * upstream and answered in one page, private, as a session answers it; a
 * refused request is answered as a session answers it; anything else goes on
 * as on the ungoverned stateless path, under the upstream's own tool name
 * where the operator gave an alias (decision 0072). A call a `confirm`
 * policy holds is the one the edge hands to a session (decision 0110).
 */

/** A 2026-07-28 request to a governed server, as the edge holds it (the rest is the request's context). */
export interface GovernedRequest {
	member: Member;
	target: UpstreamTarget;
	request: SessionRequest;
	envelope: Envelope;
	reach: Reach;
	pins: PinContext;
}

/** A request the decision renamed: its body and the routing header that names what it calls. */
export interface Renamed {
	body: string;
	headers: Record<string, string>;
}

/** How a request the decision lets through goes on: the stateless path's own forwarding. */
export type PassOn = (request: SessionRequest, renamed?: Renamed) => Promise<Response>;

/**
 * What the edge does not answer itself: a call a `confirm` policy holds goes
 * to the session (decision 0110), which asks the caller through the bridge's
 * `input_required` round and sends the call once confirmed; one an `approve`
 * policy holds goes there too, to wait for an approver (decision 0117).
 */
export const TO_SESSION = Symbol("to the session");

/**
 * The answer to a request to a governed server: its decided list, its
 * refusal, or what the upstream answers; TO_SESSION for a call the caller
 * must confirm first.
 */
export async function serveGoverned(
	c: McpContext,
	governed: GovernedRequest,
	passOn: PassOn,
): Promise<Response | typeof TO_SESSION> {
	const { request, member, reach } = governed;
	const { message } = request;
	const source = edgeSource(c, governed);
	const kind = LIST_KIND_OF_METHOD.get(message.method);
	if (kind !== undefined && decidesList(reach, kind)) return decidedList(governed, source, kind);
	const decision = await decideCallFor(source, member, request);
	const note = callNoteOf(member, decision);
	if ("refused" in decision) {
		const refusal = { jsonrpc: "2.0" as const, id: message.id, error: decision.refused.toJsonRpcError() };
		// The words a session gives: an unknown resource is this era's -32602 naming the URI.
		const answer = Response.json(modernReply(message.method, refusal, { uri: requestName(request) }));
		return withCallNote(answer, message.method, note);
	}
	const { send, real, confirm, approve } = decision;
	// A held call waits in a session: for its caller's answer, or for an approver's (decision 0117).
	if (confirm !== undefined || approve !== undefined) return TO_SESSION;
	// A call of an alias goes out under the upstream's name, in the body and in the header that mirrors it;
	// arguments a guard redacted go out redacted in the Mcp-Param-* headers that mirror them too.
	const renamed =
		send === request
			? undefined
			: {
					body: JSON.stringify(send.message),
					headers: {
						...(real === undefined ? {} : { "mcp-name": headerValue(real) }),
						...redactedParamHeaders(c.req.raw.headers, decision.redactText),
					},
				};
	const reply = await passOn(send, renamed);
	const { responseGuards: guards = [], responseRun } = decision;
	if (guards.length === 0 || responseRun === undefined) return withCallNote(reply, message.method, note);
	const guarded = await guardedReply(reply, message, guards, governed.target.maxReplyBytes, responseRun);
	return withCallNote(guarded, message.method, note);
}

/** The client's `Mcp-Param-*` headers a guard's redactions change, redacted as their arguments were; none without redactions. */
function redactedParamHeaders(
	headers: Headers,
	redactText: ((text: string) => string) | undefined,
): Record<string, string> {
	if (!redactText) return {};
	const changed: Record<string, string> = {};
	for (const [name, value] of headers) {
		if (!name.startsWith("mcp-param-")) continue;
		const decoded = decodeHeaderValue(value);
		if (decoded === undefined) continue;
		const redacted = redactText(decoded);
		if (redacted !== decoded) changed[name] = headerValue(redacted);
	}
	return changed;
}

/** A list the decision makes: every page from the upstream, shaped, held and filtered, in one private page. */
async function decidedList<K extends ListKind>(
	governed: GovernedRequest,
	source: DecisionSource,
	kind: K,
): Promise<Response> {
	const { member } = governed;
	const { message } = governed.request;
	const upstream = await upstreamList(governed, kind);
	const shaped = shapeList(member, kind, upstream);
	// Tools lists hold tools: their entries were checked with the SDK's Tool schema.
	const pinned: readonly Tool[] = kind === "tools" ? (upstream as Tool[]) : [];
	const items = await decideListFor(source, member, kind, shaped, pinned);
	const reply = { jsonrpc: "2.0" as const, id: message.id, result: { [LIST_KINDS[kind].field]: items } };
	return Response.json(modernReply(message.method, reply));
}

/** The decision's inputs as the edge has them: the isolate's caches, and the server's tools listed for this request. */
function edgeSource(c: McpContext, governed: GovernedRequest): DecisionSource {
	const { member, pins } = governed;
	const scope = c.get("scope");
	const ttlMs = c.get("settings").endpointCacheTtlMs;
	return {
		policies: () => loadPolicies(pins.reader, ttlMs),
		guards: () => loadGuards(pins.reader, ttlMs),
		guardWebhook: (webhook, body) => postReferencedWebhook(webhook, c.env, body),
		asker: () => ({
			principal: policyPrincipal(
				scope.keyId,
				scope.calling?.caller.identity ?? null,
				scope.calling?.caller.keyName ?? null,
			),
			virtualServer: null,
			now: Date.now(),
		}),
		tools: async () => {
			const upstream = await upstreamList(governed, "tools").catch((error: unknown) => {
				console.warn(
					`upstream ${member.name}: its tools are unknown to the decision on a call (${describeError(error)})`,
				);
				return [];
			});
			return { shaped: shapeList(member, "tools", upstream), upstream };
		},
		pins,
		telemetry: telemetryFor(c.env),
	};
}

/** A whole list of the upstream's, every page, asked with the client's envelope as its request would carry it. */
function upstreamList<K extends ListKind>(governed: GovernedRequest, kind: K): Promise<Array<ListItems[K]>> {
	const { clientInfo, clientCapabilities, logLevel } = governed.envelope;
	const client = {
		info: clientInfo,
		capabilities: clientCapabilities,
		...(logLevel === undefined ? {} : { logLevel }),
	};
	const session = { era: "modern" as const, sessionId: null, protocolVersion: FIRST_MODERN_VERSION, client };
	return new UpstreamConnection(governed.target).listOffered(session, kind);
}
