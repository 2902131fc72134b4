import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { type Attributes, type Span, SpanStatusCode } from "@opentelemetry/api";
import { ERROR_META_KEY } from "../mcp/failure-reply.ts";
import { type ErrorKind, isErrorKind } from "../mcp/gateway-error.ts";
import {
	NOTIFICATIONS_RESOURCES_UPDATED,
	PROMPTS_GET,
	RESOURCES_READ,
	RESOURCES_SUBSCRIBE,
	RESOURCES_UNSUBSCRIBE,
	TOOLS_CALL,
} from "../mcp/methods.ts";
import { isJsonObject } from "../primitives/json-object.ts";
import { type FailureKind, failureStatusMessage, redactedUri } from "./redaction.ts";

/**
 * Span names and attributes of the OpenTelemetry semantic conventions for MCP
 * (GenAI conventions, `docs/gen-ai/mcp.md`): one description of an MCP
 * operation for the gateway's server spans (what a client asked) and client
 * spans (what the gateway asked an upstream), and one reading of its answer.
 */

/** The attribute names the conventions define, each written once. */
export const MCP_ATTRIBUTES = {
	method: "mcp.method.name",
	protocolVersion: "mcp.protocol.version",
	resourceUri: "mcp.resource.uri",
	sessionId: "mcp.session.id",
	toolName: "gen_ai.tool.name",
	promptName: "gen_ai.prompt.name",
	operation: "gen_ai.operation.name",
	requestId: "jsonrpc.request.id",
	statusCode: "rpc.response.status_code",
	errorType: "error.type",
	transport: "network.transport",
	protocolName: "network.protocol.name",
	serverAddress: "server.address",
	serverPort: "server.port",
} as const;

/** `error.type` of a `CallToolResult` with `isError: true` (the conventions' value). */
export const TOOL_ERROR = "tool_error";

/** Methods whose `params.uri` is the resource the conventions record as `mcp.resource.uri`. */
const RESOURCE_METHODS: ReadonlySet<string> = new Set([
	RESOURCES_READ,
	RESOURCES_SUBSCRIBE,
	RESOURCES_UNSUBSCRIBE,
	NOTIFICATIONS_RESOURCES_UPDATED,
]);

/** An MCP request or notification as the spans describe it. */
export interface McpOperation {
	/** `{mcp.method.name} {target}`, or the method alone when there is no low-cardinality target. */
	name: string;
	method: string;
	/** The tool or prompt named, as the sender called it. */
	target: string | null;
	/** Every attribute the request itself gives (the span's). */
	attributes: Attributes;
	/** The low-cardinality ones: no ids, no URIs (the metrics'). */
	metricAttributes: Attributes;
}

/** What a message needs to be described: a method, maybe an id, maybe params. */
export interface DescribedMessage {
	method: string;
	id?: string | number | null | undefined;
	params?: Readonly<Record<string, unknown>> | undefined;
}

/** Whether a parsed JSON value is a request or notification (has a string method). */
export function isDescribable(value: unknown): value is DescribedMessage {
	return isJsonObject(value) && typeof value.method === "string";
}

/** The conventions' description of `message`, sent over MCP's streamable HTTP in `protocolVersion`. */
export function describeOperation(message: DescribedMessage, protocolVersion: string | null): McpOperation {
	const { method } = message;
	const params = message.params ?? {};
	const named = typeof params.name === "string" ? params.name : null;
	const metric: Attributes = {
		[MCP_ATTRIBUTES.method]: method,
		[MCP_ATTRIBUTES.transport]: "tcp",
		[MCP_ATTRIBUTES.protocolName]: "http",
	};
	if (protocolVersion) metric[MCP_ATTRIBUTES.protocolVersion] = protocolVersion;
	let target: string | null = null;
	if (method === TOOLS_CALL && named !== null) {
		target = named;
		metric[MCP_ATTRIBUTES.toolName] = named;
		metric[MCP_ATTRIBUTES.operation] = "execute_tool";
	} else if (method === PROMPTS_GET && named !== null) {
		target = named;
		metric[MCP_ATTRIBUTES.promptName] = named;
	}
	const attributes: Attributes = { ...metric };
	if (RESOURCE_METHODS.has(method) && typeof params.uri === "string") {
		attributes[MCP_ATTRIBUTES.resourceUri] = redactedUri(params.uri);
	}
	if (message.id !== undefined && message.id !== null) attributes[MCP_ATTRIBUTES.requestId] = String(message.id);
	return {
		name: target === null ? method : `${method} ${target}`,
		method,
		target,
		attributes,
		metricAttributes: metric,
	};
}

/**
 * How a JSON-RPC answer came out, as the conventions record it. No text of the answer: its
 * error message or tool output may hold a link, a token or what a tool echoed (redaction.ts).
 */
export interface AnswerOutcome {
	/** `rpc.response.status_code`: the JSON-RPC error code, when the answer is an error. */
	code: number | null;
	/** `error.type`: the code as a string, `tool_error` for an `isError` result; null on success. */
	errorType: string | null;
	/**
	 * The gateway's own failure kind (`data.kind`, or the kind in an error result's `_meta`);
	 * null when the answer names none, or a kind that is not the gateway's.
	 */
	kind: ErrorKind | null;
}

const OK: AnswerOutcome = Object.freeze({ code: null, errorType: null, kind: null });

/** The outcome of an answer; null (no answer seen) counts as no error known. */
export function outcomeOf(answer: JSONRPCMessage | null): AnswerOutcome {
	if (answer === null) return OK;
	if ("error" in answer) {
		const data = answer.error.data;
		return { code: answer.error.code, errorType: String(answer.error.code), kind: kindOf(data) };
	}
	if ("result" in answer && answer.result.isError === true) {
		const meta = answer.result._meta;
		return {
			code: null,
			errorType: TOOL_ERROR,
			kind: kindOf(isJsonObject(meta) ? meta[ERROR_META_KEY] : null),
		};
	}
	return OK;
}

/** The gateway's kind in `data`; an upstream may write anything there, so only the gateway's own kinds count. */
function kindOf(data: unknown): ErrorKind | null {
	return isJsonObject(data) && isErrorKind(data.kind) ? data.kind : null;
}

/** What failed, as the span's status names it; null when the outcome is no failure. */
export function failureKindOf(outcome: AnswerOutcome): FailureKind | null {
	if (outcome.errorType === null) return null;
	if (outcome.kind !== null) return outcome.kind;
	if (outcome.errorType === TOOL_ERROR) return "tool_error";
	return outcome.code === null ? "http_error" : "rpc_error";
}

/** The attributes an outcome adds to a span and to its metric point. */
export function outcomeAttributes(outcome: AnswerOutcome): Attributes {
	const attributes: Attributes = {};
	if (outcome.code !== null) attributes[MCP_ATTRIBUTES.statusCode] = String(outcome.code);
	if (outcome.errorType !== null) attributes[MCP_ATTRIBUTES.errorType] = outcome.errorType;
	return attributes;
}

/**
 * Records the outcome on `span` and ends it (at `endTime`, ms): a failure is status ERROR with
 * its kind and that kind's fixed sentence, never the answer's own words.
 */
export function endWithOutcome(span: Span, outcome: AnswerOutcome, endTime?: number): void {
	span.setAttributes(outcomeAttributes(outcome));
	const failure = failureKindOf(outcome);
	if (failure !== null) span.setStatus({ code: SpanStatusCode.ERROR, message: failureStatusMessage(failure) });
	span.end(endTime);
}
