import { ErrorCode, JSONRPC_VERSION, type RequestId } from "@modelcontextprotocol/sdk/types.js";

/**
 * Every failure the gateway itself produces has one of these kinds. Callers and
 * tests switch on the kind, never on the message text.
 */
/** MCP's MissingRequiredClientCapability (2026-07-28): the request lacks a client capability the server needs. */
export const MISSING_CLIENT_CAPABILITY_CODE = -32021;

export const ERROR_KINDS = {
	bad_request: { status: 400, code: ErrorCode.InvalidRequest },
	parse_error: { status: 400, code: ErrorCode.ParseError },
	invalid_request: { status: 400, code: ErrorCode.InvalidRequest },
	// MCP's UnsupportedProtocolVersion: data lists the versions the gateway speaks.
	unsupported_protocol_version: { status: 400, code: -32022 },
	// MCP's HeaderMismatch (2026-07-28): routing headers that disagree with the body.
	header_mismatch: { status: 400, code: -32020 },
	session_required: { status: 400, code: ErrorCode.InvalidRequest },
	unauthenticated: { status: 401, code: ErrorCode.InvalidRequest },
	forbidden_origin: { status: 403, code: ErrorCode.InvalidRequest },
	forbidden_host: { status: 403, code: ErrorCode.InvalidRequest },
	// A signed-in identity that no access rule grants anything.
	forbidden: { status: 403, code: ErrorCode.InvalidRequest },
	not_found: { status: 404, code: ErrorCode.InvalidRequest },
	session_not_found: { status: 404, code: ErrorCode.InvalidRequest },
	method_not_allowed: { status: 405, code: ErrorCode.InvalidRequest },
	not_acceptable: { status: 406, code: ErrorCode.InvalidRequest },
	conflict: { status: 409, code: ErrorCode.InvalidRequest },
	payload_too_large: { status: 413, code: ErrorCode.InvalidRequest },
	unsupported_media_type: { status: 415, code: ErrorCode.InvalidRequest },
	// Limits: requests per key (rate), live sessions per key, requests in flight per session.
	rate_limited: { status: 429, code: ErrorCode.InvalidRequest },
	session_limit: { status: 429, code: ErrorCode.InvalidRequest },
	too_many_in_flight: { status: 429, code: ErrorCode.InvalidRequest },
	method_not_found: { status: 404, code: ErrorCode.MethodNotFound },
	invalid_params: { status: 400, code: ErrorCode.InvalidParams },
	// MCP's code for an unknown resource URI.
	resource_not_found: { status: 404, code: -32002 },
	misconfigured: { status: 500, code: ErrorCode.InternalError },
	// The registry's read path (Workers KV) could not be read.
	registry_unavailable: { status: 503, code: ErrorCode.InternalError },
	// OAuth: the OpenID Connect provider (sign-in), or the external issuer's keys (tokens), could not be read.
	identity_provider_unavailable: { status: 502, code: ErrorCode.InternalError },
	issuer_unavailable: { status: 503, code: ErrorCode.InternalError },
	internal: { status: 500, code: ErrorCode.InternalError },
	// Upstream failures. Inside a JSON-RPC exchange they travel as a JSON-RPC
	// error with HTTP 200; outside one (a notification, a GET stream) the
	// status says what happened.
	upstream_unavailable: { status: 502, code: ErrorCode.ConnectionClosed },
	upstream_error: { status: 502, code: ErrorCode.InternalError },
	upstream_timeout: { status: 504, code: ErrorCode.RequestTimeout },
	upstream_auth_required: { status: 502, code: ErrorCode.InternalError },
	// An upstream needs a client capability the client did not declare; data.requiredCapabilities names it.
	missing_client_capability: { status: 400, code: MISSING_CLIENT_CAPABILITY_CODE },
	// MCP's URLElicitationRequiredError: the person must connect their account at the upstream
	// first; data.elicitations carries the connect link (a URL-mode elicitation).
	connection_required: { status: 403, code: ErrorCode.UrlElicitationRequired },
	/** A call may or may not have reached the upstream; it was not retried. */
	outcome_uncertain: { status: 502, code: ErrorCode.InternalError },
	reply_too_large: { status: 502, code: ErrorCode.InternalError },
	// The client cancelled the request; any answer is only a formality.
	cancelled: { status: 200, code: -32800 },
} as const satisfies Record<string, { status: number; code: number }>;

export type ErrorKind = keyof typeof ERROR_KINDS;

/** Whether `value` names one of the gateway's failure kinds (an upstream may write anything in `data.kind`). */
export function isErrorKind(value: unknown): value is ErrorKind {
	return typeof value === "string" && Object.hasOwn(ERROR_KINDS, value);
}

export interface ErrorData {
	kind: ErrorKind;
	server?: string;
	details?: Record<string, string>;
	/** Facts a protocol error carries by the spec, e.g. `supported` versions. */
	[fact: string]: unknown;
}

export interface GatewayErrorOptions {
	/** The upstream server involved, named in `data.server`. */
	server?: string;
	/** Overrides the kind's default HTTP status. */
	status?: number;
	headers?: Record<string, string>;
	/** For `upstream_error` from a JSON-RPC error reply: the upstream's error code. */
	upstreamCode?: number;
	/** Extra facts for operators, e.g. an upstream's WWW-Authenticate challenge. Never secrets. */
	details?: Record<string, string>;
	/** Overrides the kind's JSON-RPC code (an SDK validation rung's own code). */
	code?: number;
	/** The id of the request this error answers, when the body yielded one. */
	id?: RequestId | null;
	/** Facts the spec puts in `error.data` for this error (e.g. `supported`, `requested`). */
	data?: Record<string, unknown>;
	cause?: unknown;
}

/**
 * The one error type of the gateway. Handlers throw it; the edge renders it as
 * an HTTP response carrying a JSON-RPC error body.
 *
 * @example
 * throw new GatewayError("session_not_found", "Session not found: it expired or never existed.");
 */
export class GatewayError extends Error {
	readonly kind: ErrorKind;
	readonly server: string | undefined;
	readonly status: number;
	readonly headers: Record<string, string>;
	readonly upstreamCode: number | undefined;
	readonly details: Record<string, string> | undefined;
	readonly code: number;
	/** The request this error answers (rendered as the response's id); null when none is known. */
	id: RequestId | null;
	private readonly facts: Record<string, unknown> | undefined;

	constructor(kind: ErrorKind, message: string, options: GatewayErrorOptions = {}) {
		super(message, { cause: options.cause });
		this.name = "GatewayError";
		this.kind = kind;
		this.server = options.server;
		this.status = options.status ?? ERROR_KINDS[kind].status;
		this.headers = options.headers ?? {};
		this.upstreamCode = options.upstreamCode;
		this.details = options.details;
		this.code = options.code ?? ERROR_KINDS[kind].code;
		this.id = options.id ?? null;
		this.facts = options.data;
	}

	/** This error as the answer to the request with `id`, unless it already names one. */
	answering(id: RequestId | null): this {
		this.id ??= id;
		return this;
	}

	/** The JSON-RPC error object: `{ code, message, data: { kind, server? } }`. */
	toJsonRpcError(): { code: number; message: string; data: ErrorData } {
		return { code: this.code, message: this.message, data: this.data() };
	}

	/** Machine-readable facts: `{ kind, server?, details? }`. */
	data(): ErrorData {
		const data: ErrorData = { ...this.facts, kind: this.kind };
		if (this.server !== undefined) data.server = this.server;
		if (this.details !== undefined) data.details = this.details;
		return data;
	}

	/** Renders as an HTTP error response (status from the kind) with a JSON-RPC error body. */
	toResponse(id: RequestId | null = this.id): Response {
		return Response.json(
			{ jsonrpc: JSONRPC_VERSION, id, error: this.toJsonRpcError() },
			{ status: this.status, headers: this.headers },
		);
	}

	/**
	 * Renders as the answer to a JSON-RPC request: HTTP 200 with an error
	 * response for that id, so an MCP client reports it as the request's
	 * failure instead of a transport failure.
	 */
	toRpcResponse(id: RequestId): Response {
		return Response.json({ jsonrpc: JSONRPC_VERSION, id, error: this.toJsonRpcError() });
	}
}

/** An error's message as a clause, without a trailing period, for logs and sentences. */
export function describeError(error: unknown): string {
	return (error instanceof Error ? error.message : String(error)).replace(/\.+$/, "");
}
