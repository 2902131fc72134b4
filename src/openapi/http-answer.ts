import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { readCapped } from "../mcp/read-capped.ts";
import { isJsonObject } from "../primitives/json-object.ts";
import { mediaTypeOf } from "../primitives/media-type.ts";
import type { CompiledOperation } from "../registry/openapi-records.ts";
import { readExcerpt } from "./body-excerpt.ts";

/*
 * An API's answer to one call, made the tool's result. The model gets what a
 * person reading the answer would: JSON as structured content and as text,
 * text as text, anything else described, never raw bytes; and an answer that
 * is not a success, as an error it can read, with the status and the start of
 * what the API said.
 */

/** How much of a failed answer's body the error quotes: enough for an API's error message, not a whole page. */
export const ERROR_EXCERPT_BYTES = 2048;

/** Reason phrases for answers that come without one (HTTP/2 has none). */
const REASONS: Record<number, string> = {
	200: "OK",
	201: "Created",
	202: "Accepted",
	203: "Non-Authoritative Information",
	204: "No Content",
	205: "Reset Content",
	206: "Partial Content",
	300: "Multiple Choices",
	301: "Moved Permanently",
	302: "Found",
	303: "See Other",
	304: "Not Modified",
	307: "Temporary Redirect",
	308: "Permanent Redirect",
	400: "Bad Request",
	401: "Unauthorized",
	403: "Forbidden",
	404: "Not Found",
	405: "Method Not Allowed",
	406: "Not Acceptable",
	408: "Request Timeout",
	409: "Conflict",
	410: "Gone",
	412: "Precondition Failed",
	413: "Content Too Large",
	415: "Unsupported Media Type",
	422: "Unprocessable Content",
	429: "Too Many Requests",
	500: "Internal Server Error",
	501: "Not Implemented",
	502: "Bad Gateway",
	503: "Service Unavailable",
	504: "Gateway Timeout",
};

/** `HTTP 404 Not Found`: the status line as a person reads it. */
function statusLine(response: Response): string {
	const reason = response.statusText || REASONS[response.status];
	return reason ? `HTTP ${response.status} ${reason}` : `HTTP ${response.status}`;
}

function textResult(text: string): CallToolResult {
	return { content: [{ type: "text", text }] };
}

function errorResult(text: string): CallToolResult {
	return { content: [{ type: "text", text }], isError: true };
}

function isJsonType(mediaType: string): boolean {
	return mediaType === "application/json" || mediaType.endsWith("+json");
}

function isTextType(mediaType: string): boolean {
	return (
		mediaType.startsWith("text/") ||
		mediaType === "application/xml" ||
		mediaType.endsWith("+xml") ||
		mediaType === "application/yaml"
	);
}

/** The body as text in the charset its Content-Type names; UTF-8 when it names none the runtime knows. */
function decodeText(bytes: Uint8Array, contentType: string | null): string {
	const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? "")?.[1];
	try {
		return new TextDecoder(charset ?? "utf-8").decode(bytes);
	} catch (error) {
		// An unknown label is a RangeError; the text is then read as UTF-8, the web's default.
		if (error instanceof RangeError) return new TextDecoder().decode(bytes);
		throw error;
	}
}

/** A failed answer: its status line, the operation, and the start of its body. */
async function failureResult(response: Response, operation: CompiledOperation): Promise<CallToolResult> {
	const { text, cut } = await readExcerpt(response.body, ERROR_EXCERPT_BYTES);
	const head = `${statusLine(response)} from ${operation.method} ${operation.path}`;
	if (text === "") return errorResult(head);
	return errorResult(`${head}:\n${text}${cut ? `\n[… cut at ${ERROR_EXCERPT_BYTES} bytes]` : ""}`);
}

/** A 2xx JSON body: structured content (the object, or `{ result }` for any other JSON) and the same JSON as text. */
function jsonResult(bytes: Uint8Array, mediaType: string): CallToolResult {
	let json: unknown;
	try {
		json = JSON.parse(new TextDecoder().decode(bytes));
	} catch (error) {
		if (!(error instanceof SyntaxError)) throw error;
		return errorResult(`The API said its answer is JSON (${mediaType}), but it is not valid JSON: ${error.message}`);
	}
	return {
		content: [{ type: "text", text: JSON.stringify(json) }],
		structuredContent: isJsonObject(json) ? json : { result: json },
	};
}

/**
 * The tool result of an API's answer. 2xx: JSON (`application/json`, `+json`) as
 * `structuredContent` and text, text and XML as text, other types described by type and
 * size, an empty body as its status line; the body read to at most `maxBytes`, beyond
 * which the result is an error rather than a cut. 3xx: an error, since redirects are not
 * followed. Any other status: an error with the status line and the body's first
 * `ERROR_EXCERPT_BYTES` bytes.
 *
 * @example
 * const response = await fetch(built.url, built.init);
 * return answerOf(response, operation, settings.maxReplyBytes);
 */
export async function answerOf(
	response: Response,
	operation: CompiledOperation,
	maxBytes: number,
): Promise<CallToolResult> {
	if (response.status >= 300 && response.status < 400) {
		await response.body?.cancel();
		const location = response.headers.get("location");
		return errorResult(
			`The API redirected (${statusLine(response)}${location === null ? "" : ` to ${location}`}) and the gateway does not follow redirects, so ${operation.method} ${operation.path} has no answer.`,
		);
	}
	if (response.status < 200 || response.status >= 300) return failureResult(response, operation);

	const bytes = response.body === null ? new Uint8Array() : await readCapped(response.body, maxBytes);
	if (bytes === null) {
		return errorResult(`The API's answer was larger than the gateway takes (more than ${maxBytes} bytes).`);
	}
	if (bytes.byteLength === 0) {
		return textResult(response.status === 204 ? statusLine(response) : `${statusLine(response)}, with an empty body`);
	}
	const contentType = response.headers.get("content-type");
	const mediaType = mediaTypeOf(contentType);
	if (isJsonType(mediaType)) return jsonResult(bytes, mediaType);
	if (isTextType(mediaType)) return textResult(decodeText(bytes, contentType));
	return textResult(
		`The API answered ${mediaType === "" ? "a body without a content type" : mediaType} of ${bytes.byteLength} bytes, which is not passed on: only JSON and text are.`,
	);
}
