import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { type InnerCall, type ProgramLimits, runProgram } from "../codemode/program-run.ts";
import { endpointToolName } from "../codemode/tool-names.ts";
import type { ToolCall } from "../mcp/client-message.ts";
import { executeArgumentsOf, innerValue, programFailure, programResult } from "../mcp/code-tools.ts";
import { innerCall } from "../mcp/disclosure-tools.ts";
import { TOOLS_CALL } from "../mcp/methods.ts";
import { answerOf } from "../mcp/reply-answer.ts";
import { outcomeOf } from "../telemetry/mcp-spans.ts";
import {
	argumentsDigest,
	type InnerCallNote,
	takeCallNote,
	toolCallOutcome,
	withCallNote,
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
 * Each inner call is accounted in the reply's call note, so the edge records
 * a `tool_call` event for each (decision 0133).
 */
export class CodePrograms {
	constructor(private readonly state: SessionState) {}

	/** Runs the program of `call`; bad arguments throw invalid params before anything runs. */
	async run(call: ToolCall, session: ProgramSession): Promise<Response> {
		const { code, timeoutMs } = executeArgumentsOf(call);
		const notes: InnerCallNote[] = [];
		const answer = (result: object) =>
			withCallNote(Response.json({ jsonrpc: "2.0", id: call.message.id, result }), TOOLS_CALL, { inner: notes });
		const loader = this.state.env.LOADER;
		if (loader === undefined) {
			return answer(
				programFailure(
					"This gateway has no Worker Loader binding (LOADER) to run programs in: code mode cannot run here.",
					[],
				),
			);
		}
		let sent = 0;
		const inner: InnerCall = async (written, args) => {
			const name = endpointToolName(written, await session.callableNames());
			if (typeof args !== "object" || args === null || Array.isArray(args)) {
				throw new Error(`The arguments of ${name} must be an object.`);
			}
			sent += 1;
			const request = this.innerRequest(call, name, Object.fromEntries(Object.entries(args)), sent);
			const started = this.state.clock.now();
			const reply = await session.send(request);
			const headers = new Headers(reply.headers);
			const note = takeCallNote(headers);
			const answered = await answerOf(reply, this.state.settings.maxReplyBytes);
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
		const outcome = await runProgram(loader, code, inner, { ...PROGRAM_LIMITS, timeoutMs });
		return answer(
			outcome.ok ? programResult(outcome.value, outcome.logs) : programFailure(outcome.error, outcome.logs),
		);
	}

	/**
	 * The `tools/call` of one inner call: its own id beside the program's, the
	 * program's `_meta` (trace context) without its progress token, no task.
	 */
	private innerRequest(call: ToolCall, name: string, args: Record<string, unknown>, n: number): ToolCall {
		const request = innerCall(call, { name, arguments: args });
		const { _meta, task: _task, ...params } = request.message.params;
		const { progressToken: _progress, ...meta } = _meta ?? {};
		const message = {
			...request.message,
			id: `${String(call.message.id)}:code:${n}`,
			params: { ...params, ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}) },
		};
		return { ...request, message };
	}
}
