import {
	CallToolResultSchema,
	type JSONRPCMessage,
	ReadResourceResultSchema,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import type { SessionRequest } from "../../mcp/client-message.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { GUARD_META_KEY, type GuardNote } from "../../mcp/guard-notes.ts";
import { MAX_JSON_DEPTH } from "../../mcp/json-depth.ts";
import { callArguments, calledTool, withArguments } from "../../mcp/message-accessors.ts";
import { RESOURCES_READ, TOOLS_CALL } from "../../mcp/methods.ts";
import { mapReplyMessages } from "../../mcp/reply-messages.ts";
import { isJsonObject } from "../../primitives/json-object.ts";
import type { GuardRecord } from "../../registry/guard-records.ts";
import type { Telemetry } from "../../telemetry/telemetry.ts";
import type { Asker } from "../decision.ts";
import { applicableGuards } from "./applicable-guards.ts";
import {
	type GuardRun,
	rewriteJson,
	rewriteResult,
	runGuards,
	type StageContent,
	withGuardNotes,
} from "./content-scan.ts";
import type { DetectorKind } from "./detector-kinds.ts";
import { detect, redact } from "./detectors.ts";
import type { GuardWebhookPost } from "./webhook-guard.ts";

/**
 * Content guards on a call, where the governance decision lets it go: the
 * request stage before anything is sent (arguments blocked or redacted), and
 * the response stage carried with the decision to the one place its reply
 * leaves (`guardedReply`). A request no guard applies to costs one look at the
 * isolate's cached list (invariant "A feature nobody configured costs a call nothing").
 */

/** What guarding a call needs of the decision's source. */
export interface GuardSource {
	/** The published guards (`loadGuards`: the isolate's cache). */
	guards(): Promise<readonly GuardRecord[]>;
	asker(): Asker;
	/** One signed POST to a webhook guard's scanner (the session's or the edge's; governance reaches no network). */
	guardWebhook: GuardWebhookPost;
	telemetry: Telemetry;
}

/** A call the guards let go: as it is sent, what its arguments' guards found, and the guards its reply passes. */
export interface GuardedSend {
	send: SessionRequest;
	/** The request-stage guards' notes (redacted or logged). */
	guardNotes: readonly GuardNote[];
	/** The response-stage guards that apply; empty: the reply passes as it comes. */
	responseGuards: readonly GuardRecord[];
	/** What the response-stage guards run with (set with them): the telemetry, and the call as a scanner is told of it. */
	responseRun?: GuardRun;
	/**
	 * Set when a guard redacted or its scanner modified the arguments: the same
	 * change over any text, for what mirrors an argument outside the body
	 * (2026-07-28's `Mcp-Param-*` headers).
	 */
	redactText?: (text: string) => string;
}

export type GuardVerdict = GuardedSend | { refused: GatewayError; note: GuardNote };

/** The methods whose content guards read: a tool call (both stages) and a resource read (its result). */
export function guardsRead(method: string | null): boolean {
	return method === TOOLS_CALL || method === RESOURCES_READ;
}

/**
 * The guards' verdict on `send`, a request the decision lets go to `server`
 * (a tool call under the upstream's name: guards match the tool as `request`,
 * the caller's, names it). A block is a refusal naming the guard and what it
 * found, never the text.
 */
export async function guardCall(
	source: GuardSource,
	server: string,
	request: SessionRequest,
	send: SessionRequest,
): Promise<GuardVerdict> {
	const unguarded = { send, guardNotes: [], responseGuards: [] };
	const published = await source.guards();
	if (published.length === 0 || !guardsRead(send.method)) return unguarded;
	const asker = source.asker();
	const tool = calledTool(request);
	const applicable = applicableGuards(published, {
		principal: asker.principal,
		server,
		virtualServer: asker.virtualServer,
		tool,
	});
	const run: GuardRun = {
		telemetry: source.telemetry,
		webhook: {
			post: (webhook, body) => source.guardWebhook(webhook, body),
			subject: {
				server,
				tool,
				method: send.message.method,
				caller: { kind: asker.principal.kind, id: asker.principal.id },
			},
		},
	};
	const responseRun = applicable.response.length === 0 ? {} : { responseRun: run };
	if (applicable.request.length === 0 || send.method !== TOOLS_CALL) {
		return { send, guardNotes: [], responseGuards: applicable.response, ...responseRun };
	}
	const args = callArguments(send);
	const scanned = await runGuards(applicable.request, args, ARGUMENTS, run);
	if ("blocked" in scanned) {
		const sentence = `${scanned.sentence("this call's arguments", "it was not sent")}; ask its operator.`;
		return {
			refused: new GatewayError("forbidden", sentence, { server, status: 200, code: -32602 }),
			note: scanned.blocked,
		};
	}
	// The arguments are a new value only where a redacting guard found something or a scanner modified them.
	if (scanned.value === args || !isJsonObject(scanned.value)) {
		return { send, guardNotes: scanned.notes, responseGuards: applicable.response, ...responseRun };
	}
	const redacting = applicable.request.filter((guard) => guard.action === "redact");
	const modified = scanned.notes.some((note) => note.action === "modify");
	// A scanner's modification is not a rule to apply again: a mirrored value becomes what its argument became.
	const changed = modified ? changedStrings(args, scanned.value) : null;
	return {
		send: withArguments(send, scanned.value),
		guardNotes: scanned.notes,
		responseGuards: applicable.response,
		...responseRun,
		redactText: changed ? (text) => changed.get(text) ?? text : (text) => redactWith(redacting, text),
	};
}

/**
 * Each string of `before` that `after` holds changed at the same place (by
 * key and index), as a map from the old string to the new. A place `after`
 * no longer has, or holds as something else, maps nothing.
 */
function changedStrings(
	before: unknown,
	after: unknown,
	into = new Map<string, string>(),
	depth = 0,
): Map<string, string> {
	if (typeof before === "string") {
		if (typeof after === "string" && after !== before) into.set(before, after);
	} else if (depth <= MAX_JSON_DEPTH && typeof before === "object" && before !== null) {
		if (Array.isArray(before)) {
			if (Array.isArray(after))
				for (const [index, item] of before.entries()) changedStrings(item, after[index], into, depth + 1);
		} else if (isJsonObject(before) && isJsonObject(after)) {
			for (const [key, item] of Object.entries(before)) changedStrings(item, after[key], into, depth + 1);
		}
	}
	return into;
}

/** A call's arguments as guards read them: every string; a scanner's modification must be a JSON object. */
const ARGUMENTS: StageContent<unknown> = {
	rewrite: rewriteJson,
	accept: (modified) => (isJsonObject(modified) ? modified : null),
};

/** A result as guards read it: the strings a model reads; a scanner's modification must be a result of the method's shape. */
function resultContent(method: string): StageContent<Record<string, unknown>> {
	const schema = method === TOOLS_CALL ? CallToolResultSchema : ReadResourceResultSchema;
	return {
		rewrite: rewriteResult,
		accept: (modified) => (isJsonObject(modified) && schema.safeParse(modified).success ? modified : null),
	};
}

/**
 * The reply to `id` with the response-stage guards run over its result, JSON
 * or SSE message by message (the other messages pass as they are). A tool
 * result a guard blocks becomes an error result naming the guard; a resource
 * read it blocks, a refusal. What the guards found is noted in the result's `_meta`.
 */
export function guardedReply(
	reply: Response,
	request: { id: RequestId; method: string },
	guards: readonly GuardRecord[],
	maxReplyBytes: number,
	run: GuardRun,
): Promise<Response> {
	return mapReplyMessages(reply, maxReplyBytes, async (message) => guardedMessage(message, request, guards, run));
}

async function guardedMessage(
	message: JSONRPCMessage,
	request: { id: RequestId; method: string },
	guards: readonly GuardRecord[],
	run: GuardRun,
): Promise<JSONRPCMessage> {
	if (!("result" in message) || message.id !== request.id) return message;
	const { result } = message;
	// A 2026-07-28 result that asks for input, or a task's handle, holds no content yet.
	if (typeof result.resultType === "string" && result.resultType !== "complete") return message;
	const scanned = await runGuards(guards, result, resultContent(request.method), run);
	if (!("blocked" in scanned)) {
		const value = withGuardNotes(scanned.value, scanned.notes);
		// A scanner's modified result is of the method's shape; it keeps the era's resultType the upstream gave.
		const kept = typeof result.resultType === "string" ? { ...value, resultType: result.resultType } : value;
		return { ...message, result: kept };
	}
	const sentence = `${scanned.sentence("this result", "it was withheld")}; ask its operator.`;
	if (request.method !== TOOLS_CALL) {
		const refused = new GatewayError("forbidden", sentence, { status: 200, code: -32602 });
		return { jsonrpc: "2.0", id: message.id, error: refused.toJsonRpcError() };
	}
	const withheld: Record<string, unknown> = {
		content: [{ type: "text", text: sentence }],
		isError: true,
		_meta: { [GUARD_META_KEY]: [scanned.blocked] },
	};
	if (typeof result.resultType === "string") withheld.resultType = result.resultType;
	return { ...message, result: withheld };
}

/** `text` with every redacting guard's matches replaced, in order, as `runGuards` replaces them in content. */
function redactWith(guards: readonly GuardRecord[], text: string): string {
	let out = text;
	for (const guard of guards) out = redact(out, detect(out, new Set<DetectorKind>(guard.detect)));
	return out;
}
