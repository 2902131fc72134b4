import {
	type CallToolResult,
	CallToolResultSchema,
	type JSONRPCMessage,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { type InnerCall, type ProgramLimits, runProgram } from "../codemode/program-run.ts";
import { endpointToolName } from "../codemode/tool-names.ts";
import type { ToolCall } from "../mcp/client-message.ts";
import { executeArgumentsOf, innerValue, programFailure, programResult } from "../mcp/code-tools.ts";
import { innerCall } from "../mcp/disclosure-tools.ts";
import { NOTIFICATIONS_PROGRESS } from "../mcp/methods.ts";
import { answerOf } from "../mcp/reply-answer.ts";
import { SSE_HEADERS, sseMessage } from "../mcp/sse.ts";
import { InnerCallSpan } from "../telemetry/inner-call-span.ts";
import { outcomeOf } from "../telemetry/mcp-spans.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import {
	argumentsDigest,
	INNER_CALLS_META_KEY,
	type InnerCallNote,
	takeCallNote,
	toolCallOutcome,
} from "../telemetry/tool-call.ts";
import type { SessionState } from "./session-state.ts";

/** Bounds of every program besides its time (docs/code-mode.md, "Limits"). */
export const PROGRAM_LIMITS: Omit<ProgramLimits, "timeoutMs"> = {
	maxCalls: 50,
	maxSteps: 10_000_000,
	cpuMs: 5_000,
	maxResultChars: 100_000,
};

/** Sends one request through the session's own request path, as the client's own request would go. */
export type SessionSend = (request: ToolCall) => Promise<Response>;

/** What a program's session offers it: the way in for its calls, and the names it may call. */
export interface ProgramSession {
	send: SessionSend;
	callableNames(): Promise<string[]>;
}

const encoder = new TextEncoder();

/**
 * `execute_code` of an aggregate in code mode (docs/code-mode.md): the
 * program runs in a fresh isolate, and each of its inner calls is sent
 * through `send`, the session's request path from the top, as a direct
 * `tools/call` of this caller would be: recheck, shaping, policies (confirm
 * and approve included), pinning, at-most-once, the caller's credentials. A
 * refused call throws inside the program with the sentence a direct call gets.
 *
 * The reply is a stream: what an inner call's reply carries before its
 * answer (progress, under the program's own token; the upstream's requests
 * to the client, such as an elicitation, or a confirmation's question) goes
 * to the client as it comes, then the program's answer, whose `_meta` lists
 * the inner calls for the edge to account (decision 0133).
 */
export class CodePrograms {
	/** The programs running, by the id of their `execute_code`: whether one was cancelled, and the ids of its inner calls in flight. */
	private readonly running = new Map<RequestId, { cancelled: boolean; inFlight: Set<string> }>();

	constructor(private readonly state: SessionState) {}

	/**
	 * Cancels the program running under `requestId` (a held task's, on
	 * `tasks/cancel`, or its client's `notifications/cancelled`): its later
	 * inner calls throw inside it and are not sent.
	 * Returns the ids of its inner calls in flight, for their upstreams to be
	 * told; null when no program runs under that id. The isolate itself cannot
	 * be stopped from outside: the program runs on to its end or its bound.
	 */
	cancel(requestId: RequestId): string[] | null {
		const program = this.running.get(requestId);
		if (!program) return null;
		program.cancelled = true;
		return [...program.inFlight];
	}

	/** Runs the program of `call`; bad arguments throw invalid params before anything runs. */
	async run(call: ToolCall, session: ProgramSession): Promise<Response> {
		const { code, timeoutMs } = executeArgumentsOf(call);
		const loader = this.state.env.LOADER;
		if (loader === undefined) {
			const refused = programFailure(
				"This gateway has no Worker Loader binding (LOADER) to run programs in: code mode cannot run here.",
				[],
			);
			return Response.json({ jsonrpc: "2.0", id: call.message.id, result: refused });
		}
		const stream = new TransformStream<Uint8Array, Uint8Array>();
		const writer = stream.writable.getWriter();
		const send = (message: JSONRPCMessage) =>
			// A client gone away stops reading; the program still runs to its end and its calls are still accounted.
			writer.write(sseMessage(message)).catch(() => undefined);
		const program = { cancelled: false, inFlight: new Set<string>() };
		this.running.set(call.message.id, program);
		const notes: InnerCallNote[] = [];
		const outerToken = call.message.params._meta?.progressToken;
		let sent = 0;
		const telemetry = telemetryFor(this.state.env);
		const waitUntil = (promise: Promise<unknown>) => this.state.waitUntil(promise);
		const inner: InnerCall = async (written, args) => {
			const name = endpointToolName(written, await session.callableNames());
			sent += 1;
			const innerId = innerIdOf(call, sent);
			const span = InnerCallSpan.start(telemetry, waitUntil, call.message.params._meta, name, innerId);
			if (typeof args !== "object" || args === null || Array.isArray(args)) {
				span?.refused("invalid_params");
				throw new Error(`The arguments of ${name} must be an object.`);
			}
			if (program.cancelled) {
				span?.refused("cancelled");
				throw new Error(`The program was cancelled: ${name} was not called.`);
			}
			const token = outerToken === undefined ? undefined : `${String(outerToken)}:code:${sent}`;
			const request = this.innerRequest(call, name, Object.fromEntries(Object.entries(args)), innerId, {
				...(token !== undefined ? { progressToken: token } : {}),
				...span?.meta,
			});
			const started = this.state.clock.now();
			// In flight until its answer has been read: a streamed reply starts long before it answers.
			program.inFlight.add(innerId);
			let reply: Response;
			let answered: Awaited<ReturnType<typeof answerOf>>;
			try {
				reply = await session.send(request);
				answered = await answerOf(reply, this.state.settings.maxReplyBytes, (message) => {
					void send(withOuterProgress(message, token, outerToken));
				});
			} catch (error) {
				span?.failed(error);
				throw error;
			} finally {
				program.inFlight.delete(innerId);
			}
			span?.answered(answered);
			const note = takeCallNote(new Headers(reply.headers));
			notes.push({
				tool: name,
				...(note?.server !== undefined ? { server: note.server } : {}),
				...(note?.real !== undefined ? { real: note.real } : {}),
				outcome: toolCallOutcome(answered !== null, outcomeOf(answered), note),
				time: new Date(started).toISOString(),
				duration_ms: this.state.clock.now() - started,
				bytes_in: encoder.encode(JSON.stringify(request.message)).byteLength,
				bytes_out: answered === null ? 0 : encoder.encode(JSON.stringify(answered)).byteLength,
				arguments_digest: await argumentsDigest(request.message.params.arguments),
			});
			if (answered === null) throw new Error(`The call of ${name} got no answer.`);
			if ("error" in answered) throw new Error(answered.error.message);
			return innerValue(CallToolResultSchema.parse(answered.result));
		};
		const finish = async () => {
			const outcome = await runProgram(loader, code, inner, { ...PROGRAM_LIMITS, timeoutMs });
			const result: CallToolResult = outcome.ok
				? programResult(outcome.value, outcome.logs)
				: programFailure(outcome.error, outcome.logs);
			const _meta = notes.length > 0 ? { [INNER_CALLS_META_KEY]: notes } : undefined;
			await send({ jsonrpc: "2.0", id: call.message.id, result: { ...result, ...(_meta ? { _meta } : {}) } });
			await writer.close();
		};
		// The reply ends with the program; a failure of the gateway's own (not the program's) fails the stream, so the client sees it.
		this.state.waitUntil(
			finish()
				.catch((error: unknown) => writer.abort(error).catch(() => undefined))
				.finally(() => this.running.delete(call.message.id)),
		);
		return new Response(stream.readable, { headers: { ...SSE_HEADERS, "x-accel-buffering": "no" } });
	}

	/**
	 * The `tools/call` of one inner call: its own id beside the program's, the
	 * program's `_meta` with `own` over it (a progress token of its own when the
	 * program has one; the trace context of its inner span), no task.
	 */
	private innerRequest(
		call: ToolCall,
		name: string,
		args: Record<string, unknown>,
		id: string,
		own: Record<string, string>,
	): ToolCall {
		const request = innerCall(call, { name, arguments: args });
		const { _meta, task: _task, ...params } = request.message.params;
		const { progressToken: _progress, ...meta } = _meta ?? {};
		const carried = { ...meta, ...own };
		const message = {
			...request.message,
			id,
			params: { ...params, ...(Object.keys(carried).length > 0 ? { _meta: carried } : {}) },
		};
		return { ...request, message };
	}
}

/** The id of a program's `n`th inner call, beside the program's own. */
function innerIdOf(call: ToolCall, n: number): string {
	return `${String(call.message.id)}:code:${n}`;
}

/** An inner call's progress under the program's own token, so the client hears it on `execute_code`; anything else as it is. */
function withOuterProgress(
	message: JSONRPCMessage,
	token: string | undefined,
	outer: string | number | undefined,
): JSONRPCMessage {
	if (token === undefined || outer === undefined) return message;
	if (!("method" in message) || message.method !== NOTIFICATIONS_PROGRESS || "id" in message) return message;
	const params = message.params ?? {};
	if (params.progressToken !== token) return message;
	return { ...message, params: { ...params, progressToken: outer } };
}
