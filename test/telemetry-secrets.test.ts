import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { spanLine } from "../scripts/fixtures/otlp-shapes.ts";
import { ERROR_META_KEY } from "../src/mcp/failure-reply.ts";
import { FAILURE_KINDS, failureStatusMessage, redactedUri } from "../src/telemetry/redaction.ts";
import { admin, createKey, initializeBody, uniqueName } from "./support/gateway.ts";
import { registerHostile } from "./support/hostile.ts";
import { ENVELOPE, modernRequest } from "./support/modern.ts";
import {
	GATEWAY_OTLP_TENANT,
	newOtlpTenant,
	otlpEnv,
	otlpMetrics,
	otlpRequests,
	otlpSpans,
	type ReceivedSpan,
} from "./support/otlp.ts";
import {
	callBody,
	clientParent,
	gatewayWith,
	legacyPost,
	newTraceId,
	openTracedSession,
	pinger,
	replyOf,
	sessionSpanOf,
	spanOf,
} from "./support/traced-gateway.ts";

/**
 * Telemetry carries no link, token or tool output. A failure's words are for the client it
 * answers: a -32042's connect link lets whoever opens it bind their own upstream account to the
 * caller's key, a tool's error text holds what the tool echoed (paths, argument values), an
 * upstream's JSON-RPC error message is its own words. The spans, their events, the metrics and the
 * console carry the failure's kind and a fixed sentence instead. Secrets are planted in each of
 * those places, the requests are answered with them, and everything the OTLP receiver got (both
 * tenants: the edge's and the Durable Objects') and everything printed meanwhile is searched.
 */

const PEOPLE_UPSTREAM = `http://127.0.0.1:${inject("peopleUpstreamPort")}`;

/** A value nobody else's test holds, to search for. */
function planted(what: string): string {
	return `${what}-${crypto.randomUUID()}`;
}

/** Everything printed through `console` while the spies ran, one string per call. */
function capturedConsole(): { lines: string[] } {
	const captured = { lines: [] as string[] };
	for (const level of ["log", "info", "warn", "error", "debug"] as const) {
		vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
			captured.lines.push(args.map(printed).join(" "));
		});
	}
	return captured;
}

/** An argument of a console call as the console would show it, an error's cause and stack included. */
function printed(value: unknown): string {
	if (value instanceof Error) return `${value.stack ?? value.message} ${printed(value.cause)}`;
	if (typeof value === "string") return value;
	return JSON.stringify(value) ?? String(value);
}

/** The connect link of a -32042 error, and its `link=` token. */
function linkOf(url: string): { link: string; token: string } {
	const token = new URL(url).searchParams.get("link");
	expect(token).toBeTruthy();
	return { link: url, token: token ?? "" };
}

afterEach(() => {
	vi.restoreAllMocks();
});

describe("telemetry carries no link, token or tool output", () => {
	it("a connect link (in a -32042 and in a tool result), a tool's isError text, an upstream's JSON-RPC error message, an argument value and a resource URI's query reach the client, and never a span, event, metric, resource, trace line or console line: status messages are the failure's kind and a fixed sentence", async () => {
		const printedLines = capturedConsole();
		const tenant = newOtlpTenant();
		const gateway = gatewayWith(otlpEnv(tenant));
		const secrets: Record<string, string> = {};

		// A person who never connected their account at an oauth upstream: a 2025 initialize is answered -32042.
		const legacyOAuth = uniqueName("people");
		expect(
			(await admin("PUT", `/servers/${legacyOAuth}`, { url: `${PEOPLE_UPSTREAM}/mcp`, auth: { type: "oauth" } }))
				.status,
		).toBe(201);
		const modernOAuth = uniqueName("people-modern");
		expect(
			(
				await admin("PUT", `/servers/${modernOAuth}`, {
					url: `${PEOPLE_UPSTREAM}/mcp-modern`,
					auth: { type: "oauth" },
				})
			).status,
		).toBe(201);
		const toolText = planted("tool-output");
		const rpcMessage = planted("upstream-words");
		const revealing = await registerHostile("revealing", { toolText, rpcMessage });
		const { key } = await createKey({ servers: [legacyOAuth, modernOAuth, revealing.name] });

		const initializeTrace = newTraceId();
		const refused = await gateway.fetch(
			legacyPost(`/mcp/${legacyOAuth}`, key, undefined, initializeBody(), {
				traceparent: clientParent(initializeTrace),
			}),
		);
		const connectError = replyOf(refused.response, refused.text).error;
		expect(connectError?.code).toBe(-32042);
		const elicitation = (connectError?.data as { elicitations?: Array<{ url?: string }> } | undefined)
			?.elicitations?.[0];
		const legacyLink = linkOf(String(elicitation?.url));
		expect(connectError?.message).toContain(legacyLink.link);
		secrets["the -32042's connect link"] = legacyLink.link;
		secrets["the -32042's link token"] = legacyLink.token;

		// A 2026-07-28 client that takes no URL elicitation gets the link as the tool result's text.
		const modernTrace = newTraceId();
		const modernCall = await gateway.fetch(
			modernRequest(`/mcp/${modernOAuth}`, key, {
				id: 2,
				method: "tools/call",
				params: { name: "whoami", arguments: {}, _meta: { ...ENVELOPE, traceparent: clientParent(modernTrace) } },
			}),
		);
		const modernResult = replyOf(modernCall.response, modernCall.text).result as
			| { isError?: boolean; content?: Array<{ text?: string }>; _meta?: Record<string, { kind?: string }> }
			| undefined;
		expect(modernResult?.isError).toBe(true);
		expect(modernResult?._meta?.[ERROR_META_KEY]?.kind).toBe("connection_required");
		const resultLink = linkOf(/https?:\/\/\S+/.exec(modernResult?.content?.[0]?.text ?? "")?.[0] ?? "");
		secrets["the tool result's connect link"] = resultLink.link;
		secrets["the tool result's link token"] = resultLink.token;

		// An upstream whose failures say things, in a 2025 session.
		const path = `/mcp/${revealing.name}`;
		const sessionId = await openTracedSession(gateway, path, key);
		const argument = planted("argument-value");
		const toolErrorTrace = newTraceId();
		const toolError = await gateway.fetch(
			legacyPost(
				path,
				key,
				sessionId,
				callBody(3, "tool_error", { note: argument }, { traceparent: clientParent(toolErrorTrace) }),
			),
		);
		expect(replyOf(toolError.response, toolError.text).result).toMatchObject({
			isError: true,
			content: [{ type: "text", text: toolText }],
		});
		const rpcErrorTrace = newTraceId();
		const rpcError = await gateway.fetch(
			legacyPost(path, key, sessionId, callBody(4, "rpc_error", {}, { traceparent: clientParent(rpcErrorTrace) })),
		);
		expect(replyOf(rpcError.response, rpcError.text).error).toMatchObject({ code: -32000, message: rpcMessage });
		const signature = planted("uri-signature");
		const readTrace = newTraceId();
		const read = await gateway.fetch(
			legacyPost(path, key, sessionId, {
				jsonrpc: "2.0",
				id: 5,
				method: "resources/read",
				params: {
					uri: `https://drive.example/doc?sig=${signature}#${signature}`,
					_meta: { traceparent: clientParent(readTrace) },
				},
			}),
		);
		expect(replyOf(read.response, read.text).result).toBeDefined();
		secrets["the tool's isError text"] = toolText;
		secrets["the upstream's JSON-RPC error message"] = rpcMessage;
		secrets["an argument value (captureArguments off)"] = argument;
		secrets["a resource URI's query"] = signature;

		// The edge's SERVER spans, and the session's CLIENT spans of the upstream's failures.
		const poke = pinger(gateway, path, key, sessionId);
		const initialize = await spanOf(tenant, initializeTrace, "initialize", "SERVER");
		const modernServer = await spanOf(tenant, modernTrace, "tools/call whoami", "SERVER");
		const toolErrorServer = await spanOf(tenant, toolErrorTrace, "tools/call tool_error", "SERVER");
		const rpcErrorServer = await spanOf(tenant, rpcErrorTrace, "tools/call rpc_error", "SERVER");
		const readServer = await spanOf(tenant, readTrace, "resources/read", "SERVER");
		const toolErrorClient = await sessionSpanOf(toolErrorTrace, "tools/call tool_error", poke);
		const rpcErrorClient = await sessionSpanOf(rpcErrorTrace, "tools/call rpc_error", poke);
		const readClient = await sessionSpanOf(readTrace, "resources/read", poke);

		const status = (span: ReceivedSpan) => span.status;
		expect(status(initialize)).toEqual({ code: "ERROR", message: failureStatusMessage("connection_required") });
		expect(status(modernServer)).toEqual({ code: "ERROR", message: failureStatusMessage("connection_required") });
		expect(status(toolErrorServer)).toEqual({ code: "ERROR", message: failureStatusMessage("tool_error") });
		expect(status(toolErrorClient)).toEqual({ code: "ERROR", message: failureStatusMessage("tool_error") });
		expect(status(rpcErrorServer)).toEqual({ code: "ERROR", message: failureStatusMessage("rpc_error") });
		expect(status(rpcErrorClient)).toEqual({ code: "ERROR", message: failureStatusMessage("rpc_error") });
		for (const span of [readServer, readClient]) {
			expect(span.attributes["mcp.resource.uri"]).toBe("https://drive.example/doc?sig=REDACTED");
		}

		const exported = [];
		for (const where of [tenant, GATEWAY_OTLP_TENANT]) {
			const spans = await otlpSpans(where);
			exported.push(spans, spans.map(spanLine), await otlpMetrics(where), await otlpRequests(where));
			// Whatever else failed meanwhile, each error says its kind in a fixed sentence.
			const fixed = FAILURE_KINDS.map(failureStatusMessage);
			for (const span of spans.filter((candidate) => candidate.status.code === "ERROR")) {
				expect(fixed).toContain(span.status.message);
			}
		}
		const everything = JSON.stringify(exported);
		const consoleText = printedLines.lines.join("\n");
		// The search finds what is there: the tool_call lines of these calls were printed.
		expect(consoleText).toContain(`"tool":"tool_error"`);
		expect(Object.keys(secrets)).toHaveLength(8);
		const found = Object.entries(secrets).map(([what, secret]) => ({
			what,
			exported: everything.includes(secret),
			printed: consoleText.includes(secret),
		}));
		expect(found).toEqual(Object.keys(secrets).map((what) => ({ what, exported: false, printed: false })));
	});

	it("a resource URI keeps its scheme, host and path; user info and fragment go, and every query value, a bare word too, is REDACTED", () => {
		expect(redactedUri("demo://alpha/notes/7")).toBe("demo://alpha/notes/7");
		expect(redactedUri("https://ada:s3cret@drive.example/doc?sig=abc&download#page=2")).toBe(
			"https://drive.example/doc?sig=REDACTED&REDACTED",
		);
		expect(redactedUri("file:///home/ada/notes.txt?token=abc")).toBe("file:///home/ada/notes.txt?token=REDACTED");
		expect(redactedUri("urn:isbn:0451450523")).toBe("urn:isbn:0451450523");
	});
});
