import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { SessionRequest } from "../mcp/client-message.ts";
import { describeError } from "../mcp/gateway-error.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import { calledTool } from "../mcp/message-accessors.ts";
import { TOOLS_CALL } from "../mcp/methods.ts";
import type { GuardRecord } from "../registry/guard-records.ts";
import { GATEWAY_ATTRIBUTES, instrumentsOf } from "../telemetry/instruments.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import type { CallNote } from "../telemetry/tool-call.ts";
import {
	type Asker,
	type CallDecision,
	decideCall,
	decideList,
	decidesList,
	type GovernedServer,
	type RefusalReason,
	reachOf,
	upstreamName,
} from "./decision.ts";
import { guardCall, guardsRead } from "./guards/guarded-call.ts";
import type { GuardWebhookPost } from "./guards/webhook-guard.ts";
import { checkListed, type PinContext } from "./listed-tools.ts";
import { logPinVerdict } from "./pin-records.ts";
import { DEFAULT_PINNING } from "./pinning.ts";
import { type CompiledPolicies, NO_POLICIES } from "./policies.ts";

/**
 * The decision's inputs, loaded where the decision needs them and nowhere
 * else (invariant "A feature nobody configured costs a call nothing"): a
 * request that shaping alone decides loads nothing; the policies come from the
 * isolate's cache; a server's tools are listed for a call only under `block`
 * or when a policy may apply to it. The session and the stateless edge differ
 * only in their `DecisionSource`.
 */

/** A server's tools as listed: as its shaping gives them, and as its upstream wrote them (what pins compare). */
export interface ListedTools {
	shaped: readonly Tool[];
	upstream: readonly Tool[];
}

/** Where a decision's inputs come from: a session (its catalog, its clock) or the edge (a list fetched for the request). */
export interface DecisionSource {
	/** The published policies, compiled (`loadPolicies`: the isolate's cache). */
	policies(): Promise<CompiledPolicies>;
	/** The published content guards (`loadGuards`: the isolate's cache). */
	guards(): Promise<readonly GuardRecord[]>;
	/** One signed POST to a webhook guard's scanner, its secret resolved from the Worker's vars. */
	guardWebhook: GuardWebhookPost;
	/** Who asks, now. */
	asker(): Asker;
	/** The server's tools as listed, for a call that needs them; a source that cannot list them logs why and gives none. */
	tools(server: GovernedServer): Promise<ListedTools>;
	/** Reading pins, and recording a list first seen or not as approved. */
	pins: PinContext;
	telemetry: Telemetry;
}

/**
 * The decision on a request (`decideCall`), with what it needs loaded first:
 * shaping decides first, so a name the server does not offer is refused
 * before anything is read; a refusal is counted in the gateway's metrics.
 * What shaping, pins and policies let go then passes the content guards
 * (guards/guarded-call.ts): its arguments scanned, its reply's guards named.
 */
export async function decideCallFor(
	source: DecisionSource,
	server: GovernedServer,
	request: SessionRequest,
): Promise<CallDecision> {
	const decision = await judgeCall(source, server, request);
	if ("refused" in decision || !guardsRead(request.method)) return decision;
	const guarded = await guardCall(source, server.name, request, decision.send);
	if ("refused" in guarded) {
		countRefusal(source.telemetry, "guarded");
		return { refused: guarded.refused, why: "guarded", guarded: guarded.note };
	}
	const { send, guardNotes, responseGuards } = guarded;
	// Nothing applied: the decision as it was (no guard fields on a call no guard touches).
	if (send === decision.send && guardNotes.length === 0 && responseGuards.length === 0) return decision;
	return { ...decision, ...guarded };
}

/** Shaping, pins and policies on a request. */
async function judgeCall(
	source: DecisionSource,
	server: GovernedServer,
	request: SessionRequest,
): Promise<CallDecision> {
	const shaped = decideCall(server, request, null);
	if ("refused" in shaped || request.method !== TOOLS_CALL) return shaped;
	const policies = await source.policies();
	if (!reachOf(server, policies).judgedCalls) return shaped;
	const listed = await source.tools(server);
	// A held definition is refused on call as it is left out of lists; the upstream's list tells which it is.
	const pinned = held(server)
		? await checkListed(source.pins, server, { tools: listed.upstream, complete: false })
		: null;
	const decision = decideCall(server, request, { policies, asker: source.asker(), pinned, listed: listed.shaped });
	if ("refused" in decision) countRefusal(source.telemetry, decision.why);
	return decision;
}

/**
 * What a caller is served of a shaped list (`decideList`): under `block`
 * the list waits for the pins; under `warn` nothing is held, so the check of
 * its tools (the log line of each not as approved, the first list's record)
 * runs beside the answer and adds nothing to it. `upstream`: the tools as
 * the upstream wrote them, whose definitions the pins compare.
 */
export async function decideListFor<K extends ListKind>(
	source: DecisionSource,
	server: GovernedServer,
	kind: K,
	shaped: Array<ListItems[K]>,
	upstream: readonly Tool[],
): Promise<Array<ListItems[K]>> {
	if (kind !== "tools") return decideList(server, kind, shaped, null);
	const mode = server.pinning ?? DEFAULT_PINNING;
	// Tools lists hold tools (see shapeList).
	const reals = (shaped as Tool[]).map((tool) => upstreamName(server, tool.name));
	const check = async () => {
		const verdictOf = await checkListed(source.pins, server, { tools: upstream, complete: true });
		for (const real of reals) {
			const verdict = verdictOf(real);
			if (verdict) logPinVerdict(server.name, mode, real, verdict);
		}
		return verdictOf;
	};
	if (mode === "warn") {
		source.pins.waitUntil(
			check().catch((error: unknown) => console.warn(`pins of ${server.name}: ${describeError(error)}`)),
		);
	}
	const [pinned, policies] = await Promise.all([mode === "block" ? check() : null, source.policies()]);
	if (!reachOf(server, policies).judgedCalls) return shaped;
	return decideList(server, kind, shaped, { policies, asker: source.asker(), pinned });
}

/** Whether the decision, not the upstream, makes what a caller gets of this list (policies are read for tools only). */
export async function decidesListFor(source: DecisionSource, server: GovernedServer, kind: ListKind): Promise<boolean> {
	return decidesList(reachOf(server, kind === "tools" ? await source.policies() : NO_POLICIES), kind);
}

/**
 * The note on a call's reply that tells the edge's accounting what the
 * decision did (see CALL_NOTE_HEADER): refused as unknown or as held, or sent
 * under the upstream's own name.
 */
export function callNoteOf(server: GovernedServer & { captureArguments?: boolean }, decision: CallDecision): CallNote {
	if ("refused" in decision) {
		if (decision.why === "unknown") return { server: server.name, refused: "unknown_tool" };
		if (decision.why === "held") return { server: server.name, refused: "refused_pinning" };
		// A policy's or a guard's refusal is accounted by its kind (`forbidden`); a guard's also names what it found.
		return decision.guarded ? { server: server.name, guards: [decision.guarded] } : { server: server.name };
	}
	const note: CallNote = { server: server.name, real: calledTool(decision.send) ?? "" };
	if (server.captureArguments) note.capture = true;
	if (decision.guardNotes && decision.guardNotes.length > 0) note.guards = [...decision.guardNotes];
	return note;
}

function held(server: GovernedServer): boolean {
	return (server.pinning ?? DEFAULT_PINNING) === "block";
}

function countRefusal(telemetry: Telemetry, why: RefusalReason): void {
	const instruments = instrumentsOf(telemetry);
	if (why === "held") {
		instruments.toolsHeld.add(1);
		instruments.refusals.add(1, { [GATEWAY_ATTRIBUTES.refusalKind]: "pinning" });
	} else if (why === "denied") {
		instruments.refusals.add(1, { [GATEWAY_ATTRIBUTES.refusalKind]: "policy" });
	} else if (why === "guarded") {
		instruments.refusals.add(1, { [GATEWAY_ATTRIBUTES.refusalKind]: "guard" });
	}
}
