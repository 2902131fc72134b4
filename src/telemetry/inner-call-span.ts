import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { type Span, SpanKind } from "@opentelemetry/api";
import { type ErrorKind, GatewayError } from "../mcp/gateway-error.ts";
import { TOOLS_CALL } from "../mcp/methods.ts";
import type { WaitUntil } from "../primitives/wait-until.ts";
import { type AnswerOutcome, endWithOutcome, MCP_ATTRIBUTES, outcomeOf } from "./mcp-spans.ts";
import type { Telemetry } from "./telemetry.ts";
import { injectMeta, parentContext, type TraceMeta } from "./trace-context.ts";

/**
 * One inner call of a code mode program (docs/code-mode.md): an INTERNAL span
 * of the gateway's own, named as the conventions name a tool call, child of the
 * `execute_code` SERVER span whose context the program's `_meta` carries. The
 * inner request goes out with this span's context in its `_meta`, so the
 * session's CLIENT span of a call that reaches an upstream is its child; a call
 * refused before it is sent (a policy, pinning, an unknown tool) has this span
 * alone, with the refusal's kind as `error.type`.
 *
 * Telemetry off, none is made (`start` answers null): a program costs nothing more.
 */
export class InnerCallSpan {
	private ended = false;

	private constructor(
		private readonly telemetry: Telemetry,
		private readonly waitUntil: WaitUntil,
		private readonly span: Span,
		/** The `_meta` trace keys of the inner request, naming this span. */
		readonly meta: TraceMeta | undefined,
	) {}

	/** The span of the inner call `id` of `tool`, under the context in the program's `_meta`; null when telemetry is off. */
	static start(
		telemetry: Telemetry,
		waitUntil: WaitUntil,
		programMeta: unknown,
		tool: string,
		id: string,
	): InnerCallSpan | null {
		if (!telemetry.enabled) return null;
		const span = telemetry.tracer.startSpan(
			`${TOOLS_CALL} ${tool}`,
			{
				kind: SpanKind.INTERNAL,
				attributes: {
					[MCP_ATTRIBUTES.method]: TOOLS_CALL,
					[MCP_ATTRIBUTES.toolName]: tool,
					[MCP_ATTRIBUTES.operation]: "execute_tool",
					[MCP_ATTRIBUTES.requestId]: id,
				},
			},
			parentContext(programMeta),
		);
		return new InnerCallSpan(telemetry, waitUntil, span, injectMeta(span));
	}

	/**
	 * The inner call's answer (null: none came). A refusal of the gateway's own
	 * is recorded by its kind (`forbidden`, `not_found`…), which says more than
	 * the JSON-RPC code it travels with.
	 */
	answered(answer: JSONRPCMessage | null): void {
		const outcome = outcomeOf(answer);
		this.end(outcome.kind === null ? outcome : { ...outcome, errorType: outcome.kind });
	}

	/** The inner call failed without an answer (not sent, or the gateway's own failure): only its kind is recorded. */
	failed(error: unknown): void {
		this.refused(error instanceof GatewayError ? error.kind : "internal");
	}

	/** The inner call was refused before it was sent, as `kind` (bad arguments, a cancelled program). */
	refused(kind: ErrorKind): void {
		this.end({ code: null, errorType: kind, kind });
	}

	private end(outcome: AnswerOutcome): void {
		if (this.ended) return;
		this.ended = true;
		endWithOutcome(this.span, outcome);
		this.telemetry.flush(this.waitUntil);
	}
}
