import { type Attributes, type Span, SpanKind } from "@opentelemetry/api";
import { ERROR_KINDS, GatewayError } from "../mcp/gateway-error.ts";
import { TOOLS_CALL } from "../mcp/methods.ts";
import { isJsonObject } from "../primitives/json-object.ts";
import type { WaitUntil } from "../primitives/wait-until.ts";
import { watchAnswer } from "./answer-watch.ts";
import { instrumentsOf } from "./instruments.ts";
import {
	type AnswerOutcome,
	type DescribedMessage,
	describeOperation,
	endWithOutcome,
	isDescribable,
	MCP_ATTRIBUTES,
	type McpOperation,
	outcomeAttributes,
	outcomeOf,
} from "./mcp-spans.ts";
import type { Telemetry } from "./telemetry.ts";
import {
	argumentsDigest,
	type CallNote,
	emitToolCall,
	innerCallEvents,
	type ToolCallDataset,
	type ToolCallEvent,
	type ToolCallPrincipal,
	takeCallNote,
	toolCallOutcome,
	withAnswerGuards,
	withAnswerInnerCalls,
} from "./tool-call.ts";
import { injectMeta, parentContext } from "./trace-context.ts";

const encoder = new TextEncoder();

/** Who calls and where, for the `tool_call` event of a `tools/call`. */
export interface ToolCallScope {
	principal: ToolCallPrincipal;
	endpoint: string;
	/** The server the endpoint names when the call's own name does not say (`/mcp/<server>`). */
	server: string | null;
	dataset: ToolCallDataset | undefined;
	/** The event is also a log line (TOOL_CALL_LOG=on). */
	log: boolean;
	/** Counts the event where the dashboard reads it back (call-counts.ts), after the answer. */
	tally?: ((event: ToolCallEvent) => void) | undefined;
}

export interface ServerOperationInput {
	telemetry: Telemetry;
	/** The request body, parsed (a request or notification; anything else is not an MCP operation). */
	body: unknown;
	/** The HTTP request's headers: `traceparent` when `_meta` carries none. */
	headers: Headers;
	/** The body as it came (its bytes are `bytes_in`). */
	text: string;
	/** Made only for a `tools/call` (most requests are not one). */
	scope: () => ToolCallScope;
	/**
	 * Whether anything takes a `tool_call` event (its log line, a dataset, the dashboard's counts): with
	 * telemetry off and nothing to take it, a call is not observed at all.
	 */
	accounted: boolean;
	waitUntil: WaitUntil;
}

/**
 * One client request or notification the gateway receives, observed from its
 * arrival to the end of its answer: the conventions' SERVER span (parent the
 * client's `_meta` context, else its `traceparent` header), the
 * `mcp.server.operation.duration` point, and for a `tools/call` the
 * `tool_call` event. The span's context replaces the two trace keys of the
 * body's `_meta` (the client's other keys stay), so whatever forwards the
 * message upstream starts its CLIENT span under it.
 *
 * Made only for requests and notifications; with telemetry off it records
 * nothing but the `tool_call` event, which is always kept.
 */
export class ServerOperation {
	private readonly span: Span | null;
	private operation: McpOperation;
	private readonly started = Date.now();
	private digest: Promise<string> | null;
	/** The call's arguments (a `call_tool`'s: those of the tool it called). */
	private callArguments: unknown;
	private era: ToolCallEvent["era"] = "2025";
	private protocolVersion: string | null = null;
	private ended = false;

	private constructor(
		private readonly input: ServerOperationInput,
		private readonly message: DescribedMessage,
	) {
		this.operation = describeOperation(message, null);
		const { telemetry } = input;
		if (telemetry.enabled) {
			const parent = parentContext(message.params?._meta, input.headers);
			this.span = telemetry.tracer.startSpan(
				this.operation.name,
				{ kind: SpanKind.SERVER, attributes: this.operation.attributes },
				parent,
			);
			this.carryContext(this.span);
		} else this.span = null;
		this.callArguments = message.params?.arguments;
		this.digest = message.method === TOOLS_CALL ? argumentsDigest(this.callArguments) : null;
	}

	/** The operation of a body, when it is a request or notification (null for responses and anything else). */
	static of(input: ServerOperationInput): ServerOperation | null {
		const { body } = input;
		if (!isDescribable(body)) return null;
		if (!input.telemetry.enabled && (body.method !== TOOLS_CALL || !input.accounted)) return null;
		return new ServerOperation(input, body);
	}

	/** The era the edge classified and the protocol version the request speaks. */
	classified(era: ToolCallEvent["era"], protocolVersion: string | null): void {
		this.era = era;
		this.protocolVersion = protocolVersion;
		if (protocolVersion) this.span?.setAttribute(MCP_ATTRIBUTES.protocolVersion, protocolVersion);
	}

	/** The 2025 session the request belongs to, by its digest (never the raw id; never for 2026-07-28). */
	inSession(digest: string): void {
		if (this.era === "2025") this.span?.setAttribute(MCP_ATTRIBUTES.sessionId, digest);
	}

	/**
	 * The answer: its body is passed on as it comes, and the operation ends
	 * once it has been relayed (a streamed reply at its end). A Durable
	 * Object's note on the call is taken off the headers here.
	 */
	answered(response: Response): Response {
		const headers = new Headers(response.headers);
		const note = takeCallNote(headers);
		if (note?.tool !== undefined) this.calledThrough(note.tool);
		const id = this.message.id ?? null;
		return watchAnswer(
			response,
			id,
			(answer, bytes) =>
				this.end(
					outcomeOf(answer),
					answer !== null || id === null,
					bytes,
					withAnswerInnerCalls(withAnswerGuards(note, answer), answer),
				),
			headers,
		);
	}

	/**
	 * The object's note says this `call_tool` (search mode) was the call of
	 * `tool`: the span, its metric and the `tool_call` event are that tool's
	 * (`gen_ai.tool.name` the real tool), with its arguments' digest.
	 */
	private calledThrough(tool: string): void {
		const outer = this.message.params?.arguments;
		const inner = isJsonObject(outer) ? outer.arguments : undefined;
		this.callArguments = inner;
		this.digest = argumentsDigest(inner);
		this.operation = describeOperation(
			{ ...this.message, params: { ...this.message.params, name: tool, arguments: inner } },
			null,
		);
		this.span?.updateName(this.operation.name);
		this.span?.setAttributes(this.operation.attributes);
	}

	/**
	 * The request failed with `error` before any answer: the edge renders it (its JSON-RPC code is
	 * the outcome). Its kind is recorded, not its message, which may hold an upstream's words or a link.
	 */
	failed(error: unknown): void {
		const kind = error instanceof GatewayError ? error.kind : "internal";
		const code = error instanceof GatewayError ? error.code : ERROR_KINDS.internal.code;
		this.end({ code, errorType: String(code), kind }, true, 0, null);
	}

	private end(outcome: AnswerOutcome, answered: boolean, bytesOut: number, note: CallNote | null): void {
		if (this.ended) return;
		this.ended = true;
		const endTime = Date.now();
		const seconds = (endTime - this.started) / 1000;
		const { telemetry } = this.input;
		const close = () => {
			if (this.span) {
				endWithOutcome(this.span, outcome, endTime);
				instrumentsOf(telemetry).serverOperationDuration.record(seconds, this.metricAttributes(outcome));
			}
			this.flush();
		};
		const digest = this.digest;
		if (digest === null) {
			close();
			return;
		}
		// The event goes on the span before it ends (the digest is computed meanwhile); the span keeps its end time.
		this.input.waitUntil(
			digest
				.then((argumentsDigest) => this.account(argumentsDigest, outcome, answered, bytesOut, note, seconds))
				.finally(close),
		);
	}

	private account(
		digest: string,
		outcome: AnswerOutcome,
		answered: boolean,
		bytesOut: number,
		note: CallNote | null,
		seconds: number,
	): void {
		const scope = this.input.scope();
		const tool = this.operation.target ?? "";
		const split = tool.indexOf("__");
		const prefixed = scope.server === null && split > 0;
		const event: ToolCallEvent = {
			event: "tool_call",
			time: new Date(this.started).toISOString(),
			principal: scope.principal,
			endpoint: scope.endpoint,
			server: note?.server ?? (prefixed ? tool.slice(0, split) : scope.server),
			tool,
			tool_real: note?.real ?? (prefixed ? tool.slice(split + 2) : tool),
			outcome: toolCallOutcome(answered, outcome, note),
			duration_ms: Math.round(seconds * 1000),
			era: this.era,
			protocol_version: this.protocolVersion,
			bytes_in: encoder.encode(this.input.text).byteLength,
			bytes_out: bytesOut,
			arguments_digest: digest,
		};
		if (note?.capture) event.arguments = this.callArguments ?? {};
		if (note?.guards) event.guards = note.guards;
		const traceId = this.span?.spanContext().traceId;
		if (traceId) event.trace_id = traceId;
		emitToolCall(event, this.span, scope);
		scope.tally?.(event);
		// A program's inner calls: each its own event, under the program's span (docs/code-mode.md).
		for (const innerEvent of innerCallEvents(event, tool, note?.inner ?? [], scope.server)) {
			emitToolCall(innerEvent, this.span, scope);
			scope.tally?.(innerEvent);
		}
	}

	private metricAttributes(outcome: AnswerOutcome): Attributes {
		const attributes: Attributes = { ...this.operation.metricAttributes, ...outcomeAttributes(outcome) };
		if (this.protocolVersion) attributes[MCP_ATTRIBUTES.protocolVersion] = this.protocolVersion;
		return attributes;
	}

	/** The body's `_meta` names this span (only the two trace keys are replaced). */
	private carryContext(span: Span): void {
		const params = this.message.params ?? {};
		const meta = isJsonObject(params._meta) ? params._meta : {};
		const fields = injectMeta(span);
		if (!fields) return;
		const { traceparent: _parent, tracestate: _state, ...kept } = meta;
		this.message.params = { ...params, _meta: { ...kept, ...fields } };
	}

	private flush(): void {
		this.input.telemetry.flush(this.input.waitUntil);
	}
}
