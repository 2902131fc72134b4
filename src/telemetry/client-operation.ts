import { type Span, SpanKind } from "@opentelemetry/api";
import { GatewayError } from "../mcp/gateway-error.ts";
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
import { injectMeta, parentContext, traceHeaders } from "./trace-context.ts";

/** What an upstream request needs to be traced: the telemetry, and the `waitUntil` its export runs in. */
export interface TracedRequests {
	telemetry: Telemetry;
	waitUntil: WaitUntil;
}

/**
 * One request or notification the gateway sends an upstream: the
 * conventions' CLIENT span, child of the server span whose context the
 * message's `_meta` carries (put there where the client's request arrived),
 * and the `mcp.client.operation.duration` point. The message goes out with
 * its `_meta` trace keys (and the HTTP `traceparent`) naming this span; the
 * span ends when the upstream's answer has been read.
 */
export class ClientOperation {
	private readonly started = Date.now();
	private ended = false;

	private constructor(
		private readonly traced: TracedRequests,
		private readonly span: Span,
		private readonly operation: McpOperation,
		private readonly message: DescribedMessage,
		/** The body to send in place of the original. */
		readonly body: string,
		/** Headers to set on the HTTP request. */
		readonly headers: Record<string, string>,
		private readonly server: { address: string; port: number },
	) {}

	/** The operation of a JSON-RPC request or notification body; null when telemetry is off or it is none. */
	static of(
		traced: TracedRequests | undefined,
		url: string,
		body: string | undefined,
		protocolVersion: string | null,
	): ClientOperation | null {
		if (!traced?.telemetry.enabled || body === undefined) return null;
		let message: unknown;
		try {
			message = JSON.parse(body);
		} catch (error) {
			if (error instanceof SyntaxError) return null;
			throw error;
		}
		if (!isDescribable(message)) return null;
		const params = message.params ?? {};
		const meta = isJsonObject(params._meta) ? params._meta : {};
		const operation = describeOperation(message, protocolVersion);
		const target = new URL(url);
		const server = {
			address: target.hostname,
			port: target.port ? Number(target.port) : target.protocol === "https:" ? 443 : 80,
		};
		const span = traced.telemetry.tracer.startSpan(
			operation.name,
			{
				kind: SpanKind.CLIENT,
				attributes: {
					...operation.attributes,
					[MCP_ATTRIBUTES.serverAddress]: server.address,
					[MCP_ATTRIBUTES.serverPort]: server.port,
				},
			},
			parentContext(meta),
		);
		const fields = injectMeta(span);
		const { traceparent: _parent, tracestate: _state, ...kept } = meta;
		const sent = fields ? JSON.stringify({ ...message, params: { ...params, _meta: { ...kept, ...fields } } }) : body;
		return new ClientOperation(traced, span, operation, message, sent, traceHeaders(span), server);
	}

	/** The upstream's answer, passed on as it comes; the span ends when it has been read. */
	answered(response: Response): Response {
		const id = this.message.id ?? null;
		return watchAnswer(response, id, (answer) => {
			const outcome = outcomeOf(answer);
			if (answer === null && !response.ok) {
				this.end({ code: null, errorType: String(response.status), kind: null });
			} else this.end(outcome);
		});
	}

	/**
	 * The request failed before an answer (unreachable, timed out, a redirect): only its kind is
	 * recorded, as every failure's is; the error's sentence may quote the upstream.
	 */
	failed(error: unknown): void {
		const kind = error instanceof GatewayError ? error.kind : "internal";
		this.end({ code: null, errorType: kind === "upstream_timeout" ? "timeout" : kind, kind });
	}

	private end(outcome: AnswerOutcome): void {
		if (this.ended) return;
		this.ended = true;
		endWithOutcome(this.span, outcome);
		instrumentsOf(this.traced.telemetry).clientOperationDuration.record((Date.now() - this.started) / 1000, {
			...this.operation.metricAttributes,
			...outcomeAttributes(outcome),
			[MCP_ATTRIBUTES.serverAddress]: this.server.address,
			[MCP_ATTRIBUTES.serverPort]: this.server.port,
		});
		this.traced.telemetry.flush(this.traced.waitUntil);
	}
}
