import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { Span } from "@opentelemetry/api";
import { z } from "zod";
import { type GuardNote, GuardNotesSchema, guardNotesOf } from "../mcp/guard-notes.ts";
import { TOOLS_CALL } from "../mcp/methods.ts";
import { stableJson } from "../mcp/stable-json.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import { isJsonObject } from "../primitives/json-object.ts";
import type { AnswerOutcome } from "./mcp-spans.ts";

/**
 * Every tool call accounted: one `tool_call` event per `tools/call` a client
 * sends, whatever became of it, as a JSON log line (Workers Logs), as an
 * event on the call's server span, and as a data point in the operator's
 * Analytics Engine dataset when one is bound (`TOOL_CALLS`). It names who
 * called what and how it came out; never an argument's value unless the
 * server's record turns argument capture on (personal data: docs/observability.md).
 */

/** How a tool call came out. */
export const TOOL_CALL_OUTCOMES = [
	"ok",
	"tool_error",
	"refused_policy",
	"refused_limit",
	"refused_pinning",
	"unknown_tool",
	"invalid_params",
	"upstream_timeout",
	"upstream_unreachable",
	"upstream_error",
	"upstream_auth_required",
	"connection_required",
	"outcome_uncertain",
	"cancelled",
	"no_answer",
	"error",
] as const;
export type ToolCallOutcome = (typeof TOOL_CALL_OUTCOMES)[number];

/**
 * A Durable Object's note to the edge on a call it decided itself (refused
 * before sending, or sent under the upstream's own name), as a header of its
 * internal reply: the edge reads it and takes it off, so a client never sees it.
 */
export const CALL_NOTE_HEADER = "x-mcp-gateway-call-note";

export interface CallNote {
	/** The server the call went to. */
	server?: string;
	/** The upstream's own name of the tool (an operator's alias called by another). */
	real?: string;
	/** The server's record turns argument capture on. */
	capture?: boolean;
	/** Set when the object refused the call before sending it. */
	refused?: "refused_pinning" | "unknown_tool";
	/**
	 * The tool the call was for, as the endpoint names it, when the client named
	 * it through the gateway's `call_tool` (search mode): the call is accounted as that tool's.
	 */
	tool?: string;
	/** What content guards found in the call (kinds and counts): its arguments' here, its result's from the answer. */
	guards?: GuardNote[];
	/** The inner calls of a code-mode program (`execute_code`): one `tool_call` event each, beside the program's own. */
	inner?: InnerCallNote[];
}

/** One inner call of a program as the session accounted it: what its event needs that the edge cannot see. */
export const InnerCallNoteSchema = z.object({
	/** The tool as the endpoint names it. */
	tool: z.string(),
	server: z.string().optional(),
	real: z.string().optional(),
	outcome: z.enum(TOOL_CALL_OUTCOMES),
	time: z.string(),
	duration_ms: z.number(),
	bytes_in: z.number(),
	bytes_out: z.number(),
	arguments_digest: z.string(),
});
export type InnerCallNote = z.infer<typeof InnerCallNoteSchema>;

/** A tool call's reply with the object's note on it (any other method's reply unchanged). */
export function withCallNote(response: Response, method: string, note: CallNote): Response {
	if (method !== TOOLS_CALL) return response;
	const headers = new Headers(response.headers);
	headers.set(CALL_NOTE_HEADER, JSON.stringify(note));
	return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** A reply to a `call_tool` with the tool it called added to its note (whatever else the note says stays). */
export function withCalledTool(response: Response, tool: string): Response {
	const headers = new Headers(response.headers);
	const note = takeCallNote(headers) ?? {};
	headers.set(CALL_NOTE_HEADER, JSON.stringify({ ...note, tool }));
	return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** The note in a reply's headers, taken off them; null when there is none or it does not parse. */
export function takeCallNote(headers: Headers): CallNote | null {
	const text = headers.get(CALL_NOTE_HEADER);
	if (text === null) return null;
	headers.delete(CALL_NOTE_HEADER);
	try {
		const value: unknown = JSON.parse(text);
		if (typeof value !== "object" || value === null) return null;
		const { server, real, capture, refused, tool, guards, inner } = value as Record<string, unknown>;
		const guardNotes = GuardNotesSchema.safeParse(guards);
		const innerNotes = z.array(InnerCallNoteSchema).safeParse(inner);
		return {
			...(typeof tool === "string" ? { tool } : {}),
			...(typeof server === "string" ? { server } : {}),
			...(typeof real === "string" ? { real } : {}),
			...(capture === true ? { capture } : {}),
			...(refused === "refused_pinning" || refused === "unknown_tool" ? { refused } : {}),
			...(guardNotes.success && guardNotes.data.length > 0 ? { guards: guardNotes.data } : {}),
			...(innerNotes.success && innerNotes.data.length > 0 ? { inner: innerNotes.data } : {}),
		};
	} catch (error) {
		if (error instanceof SyntaxError) return null;
		throw error;
	}
}

/**
 * Where an `execute_code` answer carries its inner calls' accounts (its
 * result's `_meta`): the answer streams while the program runs, after the
 * reply's headers (and their note) have left.
 */
export const INNER_CALLS_META_KEY = "mcp-edge-gateway/inner-calls";

/** The inner calls a result's `_meta` names (none when it names none, or not as the session writes them). */
export function innerCallsOf(meta: unknown): InnerCallNote[] {
	if (!isJsonObject(meta)) return [];
	const inner = z.array(InnerCallNoteSchema).safeParse(meta[INNER_CALLS_META_KEY]);
	return inner.success ? inner.data : [];
}

/** A result with its inner calls' accounts taken out of its `_meta` (once accounted, they are the gateway's, not the client's). */
export function withoutInnerCalls(result: Record<string, unknown>): Record<string, unknown> {
	const meta = result._meta;
	if (!isJsonObject(meta) || !(INNER_CALLS_META_KEY in meta)) return result;
	const { [INNER_CALLS_META_KEY]: _inner, ...kept } = meta;
	const { _meta: _old, ...rest } = result;
	return Object.keys(kept).length > 0 ? { ...rest, _meta: kept } : rest;
}

/** The note with the inner calls an `execute_code` answer names in its `_meta` added. */
export function withAnswerInnerCalls(note: CallNote | null, answer: JSONRPCMessage | null): CallNote | null {
	if (answer === null || !("result" in answer)) return note;
	const inner = innerCallsOf(answer.result._meta);
	if (inner.length === 0) return note;
	return { ...note, inner };
}

/** What a program's inner calls' events share with the program's own: who called, where, in which era and trace. */
export type InnerCallBase = Pick<ToolCallEvent, "principal" | "endpoint" | "era" | "protocol_version" | "trace_id">;

/**
 * The `tool_call` events of a program's inner calls, one each, `within` the
 * tool that ran the program; `server` is the endpoint's, for a tool whose
 * name and note do not say (docs/code-mode.md).
 */
export function innerCallEvents(
	base: InnerCallBase,
	within: string,
	notes: readonly InnerCallNote[],
	server: string | null,
): ToolCallEvent[] {
	return notes.map((inner) => {
		const split = inner.tool.indexOf("__");
		return {
			event: "tool_call",
			time: inner.time,
			principal: base.principal,
			endpoint: base.endpoint,
			server: inner.server ?? (split > 0 ? inner.tool.slice(0, split) : server),
			tool: inner.tool,
			tool_real: inner.real ?? (split > 0 ? inner.tool.slice(split + 2) : inner.tool),
			outcome: inner.outcome,
			duration_ms: inner.duration_ms,
			era: base.era,
			protocol_version: base.protocol_version,
			bytes_in: inner.bytes_in,
			bytes_out: inner.bytes_out,
			arguments_digest: inner.arguments_digest,
			...(base.trace_id !== undefined ? { trace_id: base.trace_id } : {}),
			within,
		};
	});
}

/** The note with what response-stage guards noted on the answer's result (its `_meta`) added. */
export function withAnswerGuards(note: CallNote | null, answer: JSONRPCMessage | null): CallNote | null {
	const found = answer !== null && "result" in answer ? guardNotesOf(answer.result._meta) : [];
	if (found.length === 0) return note;
	return { ...note, guards: [...(note?.guards ?? []), ...found] };
}

/** Gateway failure kinds (`data.kind`) and the outcome each one is. */
const OUTCOME_OF_KIND: Readonly<Record<string, ToolCallOutcome>> = {
	forbidden: "refused_policy",
	rate_limited: "refused_limit",
	session_limit: "refused_limit",
	too_many_in_flight: "refused_limit",
	upstream_timeout: "upstream_timeout",
	upstream_unavailable: "upstream_unreachable",
	upstream_error: "upstream_error",
	reply_too_large: "upstream_error",
	misconfigured: "upstream_error",
	upstream_auth_required: "upstream_auth_required",
	connection_required: "connection_required",
	outcome_uncertain: "outcome_uncertain",
	cancelled: "cancelled",
	invalid_params: "invalid_params",
};

/** JSON-RPC's invalid params: an upstream's answer to arguments (or a tool name) it does not take. */
const INVALID_PARAMS = -32602;

/** The outcome of a call from its answer, and from what the object noted of it. */
export function toolCallOutcome(answered: boolean, outcome: AnswerOutcome, note: CallNote | null): ToolCallOutcome {
	if (note?.refused) return note.refused;
	if (!answered) return "no_answer";
	if (outcome.kind !== null && OUTCOME_OF_KIND[outcome.kind]) return OUTCOME_OF_KIND[outcome.kind] ?? "error";
	if (outcome.errorType === null) return "ok";
	if (outcome.code === null) return "tool_error";
	return outcome.code === INVALID_PARAMS ? "invalid_params" : "error";
}

/** Who called: what the edge authenticated, never a credential. */
export interface ToolCallPrincipal {
	kind: "key" | "person";
	/** The key id, or the person's principal id (rule, generation, user digest). */
	id: string;
	/** The person's subject at their issuer; null for a key. */
	subject: string | null;
	/** The person's email, only when their issuer verified it. */
	email: string | null;
	/** The access rule a person came in by. */
	rule: string | null;
	/** The key's name, when it has one. */
	key_name: string | null;
}

/** One accounted tool call: the event's fields, as logged. */
export interface ToolCallEvent {
	event: "tool_call";
	/** When the call arrived (ISO 8601). */
	time: string;
	principal: ToolCallPrincipal;
	/** `/mcp/<name>` or `/mcp`. */
	endpoint: string;
	/** The upstream server the call was for; null when the name routed to none. */
	server: string | null;
	/** The tool's name as the client called it (on `/mcp`, `server__tool`). */
	tool: string;
	/** The upstream's own name of it (differs when the operator aliased it). */
	tool_real: string;
	outcome: ToolCallOutcome;
	duration_ms: number;
	/** `2025` (sessions) or `2026-07-28`. */
	era: "2025" | "2026-07-28";
	protocol_version: string | null;
	/** The request body's bytes, and the reply's as relayed. */
	bytes_in: number;
	bytes_out: number;
	/** SHA-256 (hex) of the arguments' stable JSON (sorted keys): equal arguments, equal digests. */
	arguments_digest: string;
	/** The arguments themselves, only when the server's record has `captureArguments: true`. */
	arguments?: unknown;
	/** The server span's trace, when traces are exported. */
	trace_id?: string;
	/** What content guards found (guard, action, kinds and counts; never the text), when any found something. */
	guards?: GuardNote[];
	/** Set on an inner call of a code-mode program: the tool that ran the program (`execute_code`). */
	within?: string;
}

/** The digest of a call's arguments (absent arguments are `{}`, as the SDK sends them). */
export function argumentsDigest(args: unknown): Promise<string> {
	return sha256Hex(stableJson(args ?? {}));
}

/** The optional Analytics Engine binding's one method the gateway uses. */
export interface ToolCallDataset {
	writeDataPoint(point: { indexes?: string[]; blobs?: string[]; doubles?: number[] }): void;
}

/**
 * The event as an Analytics Engine data point. Column order (documented in
 * docs/observability.md, and never reordered: queries name columns by position):
 * index1 server; blob1 outcome, blob2 server, blob3 tool, blob4 tool_real,
 * blob5 endpoint, blob6 principal kind, blob7 principal id, blob8 person
 * (email, else subject), blob9 rule, blob10 key name, blob11 era, blob12
 * protocol version, blob13 arguments digest, blob14 trace id; double1
 * duration ms, double2 bytes in, double3 bytes out.
 */
export function dataPointOf(event: ToolCallEvent): { indexes: string[]; blobs: string[]; doubles: number[] } {
	const { principal } = event;
	return {
		indexes: [event.server ?? ""],
		blobs: [
			event.outcome,
			event.server ?? "",
			event.tool,
			event.tool_real,
			event.endpoint,
			principal.kind,
			principal.id,
			principal.email ?? principal.subject ?? "",
			principal.rule ?? "",
			principal.key_name ?? "",
			event.era,
			event.protocol_version ?? "",
			event.arguments_digest,
			event.trace_id ?? "",
		],
		doubles: [event.duration_ms, event.bytes_in, event.bytes_out],
	};
}

/**
 * Emits the event where it is wanted: the log line (TOOL_CALL_LOG=on), the span event (when the call
 * has a recording span), the data point (when a dataset is bound).
 */
export function emitToolCall(
	event: ToolCallEvent,
	span: Span | null,
	sinks: { log: boolean; dataset: ToolCallDataset | undefined },
): void {
	const { dataset } = sinks;
	if (sinks.log) console.log(JSON.stringify(event));
	if (span?.isRecording()) {
		const { principal } = event;
		span.addEvent("tool_call", {
			outcome: event.outcome,
			"principal.kind": principal.kind,
			"principal.id": principal.id,
			...(principal.email ? { "principal.email": principal.email } : {}),
			...(principal.subject ? { "principal.subject": principal.subject } : {}),
			...(principal.rule ? { "principal.rule": principal.rule } : {}),
			...(principal.key_name ? { "principal.key_name": principal.key_name } : {}),
			endpoint: event.endpoint,
			...(event.server ? { server: event.server } : {}),
			tool: event.tool,
			tool_real: event.tool_real,
			duration_ms: event.duration_ms,
			era: event.era,
			bytes_in: event.bytes_in,
			bytes_out: event.bytes_out,
			arguments_digest: event.arguments_digest,
			...(event.arguments !== undefined ? { arguments: JSON.stringify(event.arguments) } : {}),
		});
	}
	if (!dataset) return;
	try {
		dataset.writeDataPoint(dataPointOf(event));
	} catch (error) {
		// The dataset refusing a point (over its limits) must not fail the call it accounts.
		console.warn(`tool_call: data point not written: ${error instanceof Error ? error.message : String(error)}`);
	}
}
