import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { SessionRequest } from "../mcp/client-message.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import type { GuardNote } from "../mcp/guard-notes.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import { callArguments, withToolName } from "../mcp/message-accessors.ts";
import { TOOLS_CALL, TOOLS_LIST } from "../mcp/methods.ts";
import { unknownName } from "../mcp/unknown-offers.ts";
import type { GuardRecord } from "../registry/guard-records.ts";
import type { EndpointTools, ToolShaping } from "../registry/tool-shaping-schema.ts";
import type { GuardRun } from "./guards/content-scan.ts";
import { hiddenOfferRefusal, type OfferShaping, offeredItems } from "./offer-shaping.ts";
import type { PinnedServer } from "./pin-records.ts";
import { DEFAULT_PINNING, heldToolSentence, type PinVerdict } from "./pinning.ts";
import {
	type CompiledPolicies,
	type PolicyPrincipal,
	type PolicyTool,
	type PolicyWebhook,
	policyVerdict,
} from "./policies.ts";
import { endpointToolView, realToolName, shapeTools } from "./tool-shaping.ts";

/**
 * The one governance decision (invariant "What a caller may not call, it does
 * not see"): what a caller sees of a server's lists and whether, and under
 * which name, a request of theirs goes to it. Pure: it is given what it
 * decides by, compiled (the server's shaping, its pins' verdicts, the
 * compiled policies, who asks), and does no I/O, so the session and the
 * stateless 2026-07-28 edge decide by the same code. What loads those inputs,
 * and only when they matter, is `decision-inputs.ts`.
 *
 * A list is decided in two steps, because the session keeps the shaped list
 * in its catalog (names, aggregate routes and the at-most-once read-only check
 * follow it): `shapeList` where the list enters, `decideList` whenever a
 * caller is served it. A call is decided in one: `decideCall`.
 */

/** A server as governance sees it: a member's name, incarnation, pinning mode and the operator's shaping. */
export interface GovernedServer extends PinnedServer, OfferShaping {
	tools?: ToolShaping | null | undefined;
}

/** Who asks, as the policies see them. */
export interface Asker {
	principal: PolicyPrincipal;
	/** The virtual server the request came through; null on `/mcp/<server>` and `/mcp`. */
	virtualServer: string | null;
	/** How that virtual server presents its members' tools (its own overrides); absent: as the server's shaping gives them. */
	endpointTools?: EndpointTools | undefined;
	/** Now, in milliseconds since the epoch, by the asker's clock (tests inject theirs). */
	now: number;
}

/** Each upstream tool's verdict against the server's pins, by its upstream name (null: a name the list lacks). */
export type PinVerdicts = (real: string) => PinVerdict | null;

/**
 * What a request is judged by beyond the server's shaping: the policies, who
 * asks, and the pins' verdicts where they can hold a tool (under `block`;
 * null otherwise). Absent (null) where `reachOf` says nothing but shaping
 * touches the server's tools: the fast answer, which asks nothing more.
 */
export interface Judges {
	policies: CompiledPolicies;
	asker: Asker;
	pinned: PinVerdicts | null;
}

/**
 * How far governance reaches into one server: the one answer to "does
 * governance touch this server?", for the session and the edge alike.
 */
export interface Reach {
	/** Its tools lists are rewritten: shaped, held by pins under `block`, or filtered by a policy that may apply. */
	tools: boolean;
	/** A tool call needs the server's tools as listed: pins under `block`, or a policy that may apply. */
	judgedCalls: boolean;
	/** The operator chose which of its prompts callers see. */
	prompts: boolean;
	/** The operator chose which of its resources (and templates) callers see. */
	resources: boolean;
}

/** How far governance reaches into `server`, under these policies. */
export function reachOf(server: GovernedServer, policies: CompiledPolicies): Reach {
	const held = (server.pinning ?? DEFAULT_PINNING) === "block";
	const judged = held || governs(policies, server.name);
	return {
		tools: Boolean(server.tools) || judged,
		judgedCalls: judged,
		prompts: Boolean(server.prompts),
		resources: Boolean(server.resources),
	};
}

/** Whether governance touches the server at all (else every request of it passes as it is). */
export function touches(reach: Reach): boolean {
	return reach.tools || reach.prompts || reach.resources;
}

/** Whether a list of this kind from the server is what the decision makes of it, not what the upstream wrote. */
export function decidesList(reach: Reach, kind: ListKind): boolean {
	if (kind === "tools") return reach.tools;
	return kind === "prompts" ? reach.prompts : reach.resources;
}

/**
 * A list as the server's shaping gives it, where it enters (the session's
 * catalog, the edge's fetch): tools hidden or renamed away left out, aliases,
 * descriptions and annotations applied; prompts and resources the operator
 * hides left out (URIs in normal form).
 */
export function shapeList<K extends ListKind>(
	server: GovernedServer,
	kind: K,
	items: Array<ListItems[K]>,
): Array<ListItems[K]> {
	if (kind !== "tools") return offeredItems(server, kind, items);
	// Tools lists hold tools: their entries were checked with the SDK's Tool schema.
	return shapeTools(`upstream ${server.name}`, server.tools ?? undefined, items as Tool[]) as Array<ListItems[K]>;
}

/**
 * What of a shaped list (`shapeList`) this caller sees: tools the pins hold
 * and tools a policy hides left out. Prompts and resources are decided by
 * their shaping alone, already applied.
 */
export function decideList<K extends ListKind>(
	server: GovernedServer,
	kind: K,
	shaped: Array<ListItems[K]>,
	judges: Judges | null,
): Array<ListItems[K]> {
	if (kind !== "tools" || judges === null) return shaped;
	// Tools lists hold tools (see shapeList).
	let tools = shaped as Tool[];
	const { pinned } = judges;
	if (pinned !== null) {
		tools = tools.filter((tool) => pinned(upstreamName(server, tool.name))?.served !== false);
	}
	if (governs(judges.policies, server.name)) {
		tools = tools.filter(
			(tool) =>
				policyVerdict(judges.policies, {
					...policyContext(server, judges.asker),
					tool: toolAsSeen(server, judges.asker, tool.name, tool.annotations),
					method: TOOLS_LIST,
				}).allowed,
		);
	}
	return tools as Array<ListItems[K]>;
}

/**
 * What a decision on a request came to: sent, under the upstream's own tool
 * name where shaping gave an alias (`real`, for tools/call), or refused with
 * the answer the caller gets and why (for the gateway's own accounting).
 */
export type CallDecision =
	| {
			send: SessionRequest;
			real?: string;
			/** A `confirm` policy holds the call until the caller confirms it. */
			confirm?: Confirmation;
			/** An `approve` policy holds the call until an approver decides it. */
			approve?: Approval;
			/** What request-stage content guards found in the arguments (guarded-call.ts). */
			guardNotes?: readonly GuardNote[];
			/** The response-stage guards the reply passes through; absent or empty: none. */
			responseGuards?: readonly GuardRecord[];
			/** What the response-stage guards run with, set with them (guarded-call.ts). */
			responseRun?: GuardRun;
			/** Set when a guard redacted or its scanner modified the arguments: the same change over any text (guarded-call.ts). */
			redactText?: (text: string) => string;
	  }
	| { refused: GatewayError; why: RefusalReason; guarded?: GuardNote };

/** A call a `confirm` policy holds until the caller confirms it: which policy, and the tool as the caller named it. */
export interface Confirmation {
	policy: string;
	server: string;
	/** The name the caller called (an alias where shaping gave one). */
	tool: string;
}

/** A call an `approve` policy holds until an approver decides it, within `timeoutMs`. */
export interface Approval extends Confirmation {
	timeoutMs: number;
	/** Where approvers are told of the held call: a URL and a `${UPSTREAM_NAME}` reference to the signing secret. */
	webhook?: PolicyWebhook;
}

/** Why a request was refused: a name or URI not offered, a tool the pins hold, a call a policy denies, arguments a guard blocks. */
export type RefusalReason = "unknown" | "held" | "denied" | "guarded";

/**
 * Whether and how a request goes to the server, before anything is sent: a
 * tool the operator hides, the real name of an aliased one, a prompt or
 * resource the operator hides are refused exactly as unknown ones; a tool the
 * pins hold is refused saying it is new or changed; a call a policy denies is
 * refused naming the policy; one a `confirm` policy holds is sent once the
 * caller confirms it (`confirm`), one an `approve` policy holds once an
 * approver approves it (`approve`). A call of an alias is sent under the real name.
 * `judges.listed`: the server's tools as shaped, whose annotations a policy
 * reads (a tool it does not list is judged with none).
 */
export function decideCall(
	server: GovernedServer,
	request: SessionRequest,
	judges: (Judges & { listed: readonly Tool[] }) | null,
): CallDecision {
	if (request.method !== TOOLS_CALL) {
		const hidden = hiddenOfferRefusal(server, request);
		return hidden ? { refused: hidden, why: "unknown" } : { send: request };
	}
	const exposed = request.message.params.name;
	const real = realToolName(server.tools ?? undefined, exposed);
	if (real === null) return { refused: unknownName("tool", exposed), why: "unknown" };
	const send = real === exposed ? request : withToolName(request, real);
	if (judges === null) return { send, real };
	const pin = judges.pinned?.(real);
	if (pin && !pin.served) {
		return {
			refused: new GatewayError("invalid_params", heldToolSentence(exposed, pin), { server: server.name }),
			why: "held",
		};
	}
	if (governs(judges.policies, server.name)) {
		const listed = judges.listed.find((tool) => tool.name === exposed);
		const tool = toolAsSeen(server, judges.asker, exposed, listed?.annotations);
		const verdict = policyVerdict(judges.policies, {
			...policyContext(server, judges.asker),
			tool,
			arguments: callArguments(request),
			method: TOOLS_CALL,
		});
		if (!verdict.allowed) {
			// The sentence names the policy, never its expression.
			const sentence = `The gateway's policy '${verdict.policy}' does not allow this call of '${tool.name}'; ask its operator.`;
			return {
				refused: new GatewayError("forbidden", sentence, { server: server.name, status: 200, code: -32602 }),
				why: "denied",
			};
		}
		if (verdict.approve !== undefined) {
			const { policy, timeoutMs, webhook } = verdict.approve;
			const approve: Approval = { policy, server: server.name, tool: exposed, timeoutMs, ...(webhook && { webhook }) };
			return { send, real, approve };
		}
		if (verdict.confirm !== undefined) {
			return { send, real, confirm: { policy: verdict.confirm, server: server.name, tool: exposed } };
		}
	}
	return { send, real };
}

/** The upstream's own name of a tool its shaped list names `exposed`. */
export function upstreamName(server: GovernedServer, exposed: string): string {
	return realToolName(server.tools ?? undefined, exposed) ?? exposed;
}

/** Whether any policy could apply to `server` at all (else nothing is asked of them). */
function governs(policies: CompiledPolicies, server: string): boolean {
	return policies.policies.some(
		(policy) => policy.applies === null || policy.applies.servers?.includes(server) !== false,
	);
}

function policyContext(server: GovernedServer, asker: Asker) {
	return { principal: asker.principal, server: server.name, virtualServer: asker.virtualServer, now: asker.now };
}

/** A shaped tool as the asker's endpoint presents it to a policy (a virtual server's overrides applied). */
function toolAsSeen(
	server: GovernedServer,
	asker: Asker,
	exposed: string,
	annotations: Tool["annotations"],
): PolicyTool {
	return {
		...endpointToolView(asker.endpointTools, server.name, exposed, annotations),
		realName: upstreamName(server, exposed),
	};
}
