/**
 * `mcpgw connect` as a person runs it (a child process of mcpgw.mjs), and the
 * MCP exchanges a test drives through it as the gateway would: requests in
 * frames, their JSON or SSE bodies parsed with the SDK's schemas.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import {
	type CallToolResult,
	CallToolResultSchema,
	type JSONRPCMessage,
	JSONRPCMessageSchema,
	LATEST_PROTOCOL_VERSION,
	type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { createParser } from "eventsource-parser";
import { eventually } from "../support/eventually.ts";
import type { Answer, FakeGateway } from "./fake-gateway.ts";

const BIN = join(import.meta.dirname, "..", "..", "scripts", "cli", "mcpgw.mjs");
export const ROOT = join(import.meta.dirname, "..", "..");

export class ConnectorProcess {
	readonly child: ChildProcess;
	stderr = "";
	readonly exited: Promise<number | null>;

	constructor(args: string[], env: Record<string, string> = {}) {
		this.child = spawn(process.execPath, [BIN, "connect", ...args], {
			cwd: ROOT,
			env: { ...process.env, NO_COLOR: "1", ...env },
			stdio: ["ignore", "ignore", "pipe"],
		});
		this.child.stderr?.on("data", (chunk) => {
			this.stderr += String(chunk);
		});
		this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
	}

	/** The pids of the children it logged as started, in order. */
	startedPids(): number[] {
		return [...this.stderr.matchAll(/session started \(child pid (\d+)\)/g)].map((match) => Number(match[1]));
	}

	async stop(): Promise<void> {
		if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
		await this.exited;
	}
}

/** Whether process `pid` is alive. */
export function alive(pid: number): boolean {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		if ((error as NodeJS.ErrnoException).code === "ESRCH") return false;
		throw error;
	}
}

/** The JSON-RPC messages of an answer's body: one JSON message, or an SSE stream's. */
export function messagesOf(answer: Answer): JSONRPCMessage[] {
	if (answer.body === "") return [];
	if (!answer.headers.get("content-type")?.startsWith("text/event-stream")) {
		return [JSONRPCMessageSchema.parse(JSON.parse(answer.body))];
	}
	const messages: JSONRPCMessage[] = [];
	const parser = createParser({
		onEvent: (event) => {
			if (event.data) messages.push(JSONRPCMessageSchema.parse(JSON.parse(event.data)));
		},
	});
	parser.feed(answer.body);
	return messages;
}

/** The message answering request `id` in an answer's body. */
export function replyTo(answer: Answer, id: RequestId): JSONRPCMessage {
	const reply = messagesOf(answer).find((message) => "id" in message && message.id === id && !("method" in message));
	if (!reply) throw new Error(`no reply to ${String(id)} in ${answer.status}: ${answer.body}`);
	return reply;
}

/** A tool result's text content, joined. */
export function textOf(result: CallToolResult): string {
	return result.content.map((item) => (item.type === "text" ? item.text : "")).join("");
}

const POST_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" };

/** An MCP session driven through the fake gateway, as the gateway's upstream side would. */
export class FramedSession {
	sessionId: string | undefined;
	#nextId = 1;
	readonly #gateway: FakeGateway;
	readonly #extraHeaders: Record<string, string>;

	constructor(gateway: FakeGateway, extraHeaders: Record<string, string> = {}) {
		this.#gateway = gateway;
		this.#extraHeaders = extraHeaders;
	}

	headers(): Record<string, string> {
		return {
			...POST_HEADERS,
			...this.#extraHeaders,
			...(this.sessionId ? { "mcp-session-id": this.sessionId, "mcp-protocol-version": LATEST_PROTOCOL_VERSION } : {}),
		};
	}

	/** initialize, then notifications/initialized; the answer of initialize. */
	async initialize(): Promise<Answer> {
		const answer = await this.post("initialize", {
			protocolVersion: LATEST_PROTOCOL_VERSION,
			capabilities: {},
			clientInfo: { name: "connector-test", version: "1.0.0" },
		});
		const sessionId = answer.headers.get("mcp-session-id");
		if (answer.status !== 200 || !sessionId) return answer;
		this.sessionId = sessionId;
		const initialized = this.#gateway.request("POST", this.headers(), {
			jsonrpc: "2.0",
			method: "notifications/initialized",
		});
		await initialized.ended;
		if (initialized.status !== 202) throw new Error(`notifications/initialized: ${initialized.status}`);
		return answer;
	}

	/** Sends a request; resolves once its answer ended. */
	async post(method: string, params: Record<string, unknown> = {}): Promise<Answer & { id: number; rpcId: number }> {
		const answer = this.send(method, params);
		await answer.ended;
		return answer;
	}

	/** Sends a request without waiting for its answer; `rpcId` is the JSON-RPC id. */
	send(method: string, params: Record<string, unknown> = {}): Answer & { id: number; rpcId: number } {
		const rpcId = this.#nextId++;
		const answer = this.#gateway.request("POST", this.headers(), { jsonrpc: "2.0", id: rpcId, method, params });
		return Object.assign(answer, { rpcId });
	}

	/** A tool call's result content as text (throws on a JSON-RPC error). */
	async callText(name: string, args: Record<string, unknown> = {}): Promise<string> {
		const call = await this.post("tools/call", { name, arguments: args });
		const reply = replyTo(call, call.rpcId);
		if (!("result" in reply)) throw new Error(`tools/call ${name}: ${JSON.stringify(reply)}`);
		return textOf(CallToolResultSchema.parse(reply.result));
	}

	async delete(): Promise<Answer> {
		const answer = this.#gateway.request("DELETE", this.headers());
		await answer.ended;
		return answer;
	}
}

/** Waits until the connector said hello `count` times. */
export function connected(gateway: FakeGateway, count = 1): Promise<true> {
	return eventually(() => gateway.connections >= count || undefined, `connection ${count}`, 15_000);
}
