/**
 * One upstream session of a stdio server: a child process of its own (the
 * SDK's StdioClientTransport), behind a streamable-HTTP server transport of
 * its own (the SDK's WebStandardStreamableHTTPServerTransport, which mints the
 * session id and speaks HTTP to the gateway). Between the two, messages are
 * passed as they are, both ways: no framing of ours on either side.
 */
import { randomUUID } from "node:crypto";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { logLine } from "./connect-log.ts";
import { MessageRoutes } from "./message-routes.ts";
import type { IncomingCall } from "./request-runs.ts";

/** What a session's child runs. */
export interface StdioCommand {
	command: string;
	args: string[];
}

export interface SessionHooks {
	/** The transport minted the session's id (its initialize was accepted). */
	started(session: StdioSession, id: string): void;
	/** The session is over: its child is gone or going. */
	ended(session: StdioSession): void;
}

export class StdioSession {
	readonly #child: StdioClientTransport;
	readonly #transport: WebStandardStreamableHTTPServerTransport;
	readonly #routes = new MessageRoutes();
	readonly #calls = new Set<IncomingCall>();
	readonly #hooks: SessionHooks;
	#ended = false;
	#id: string | undefined;
	/** Kept from the spawn: the transport forgets its process once it exits, and the log line of the end names it. */
	#pid: number | null = null;

	private constructor(command: StdioCommand, env: Record<string, string>, hooks: SessionHooks) {
		this.#hooks = hooks;
		this.#child = new StdioClientTransport({ command: command.command, args: command.args, env, stderr: "inherit" });
		this.#transport = new WebStandardStreamableHTTPServerTransport({
			sessionIdGenerator: () => randomUUID(),
			onsessioninitialized: (id) => {
				this.#id = id;
				hooks.started(this, id);
			},
		});
		this.#transport.onmessage = (message) => this.#toChild(message);
		this.#child.onmessage = (message) => this.#toGateway(message);
		// A DELETE closes the transport after answering; the child goes with it.
		this.#transport.onclose = () => void this.end("the session was closed");
		this.#child.onclose = () => this.#childGone();
		this.#child.onerror = (error) => logLine(`session ${this.label}: the server process: ${error.message}`);
	}

	/** Spawns the child; rejects with the reason when the command cannot be started. */
	static async start(command: StdioCommand, env: Record<string, string>, hooks: SessionHooks): Promise<StdioSession> {
		const session = new StdioSession(command, env, hooks);
		await session.#child.start();
		session.#pid = session.#child.pid;
		await session.#transport.start();
		return session;
	}

	get id(): string | undefined {
		return this.#id;
	}

	get pid(): number | null {
		return this.#pid;
	}

	/** For log lines: the child's pid, never the session id (a bearer secret on the gateway's side). */
	get label(): string {
		return `child pid ${this.pid ?? "?"}`;
	}

	/** One HTTP request of this session, answered by its transport. */
	async handle(call: IncomingCall): Promise<Response> {
		this.#calls.add(call);
		call.signal.addEventListener("abort", () => this.#calls.delete(call), { once: true });
		const request = new Request("http://connector.invalid/mcp", {
			method: call.method,
			headers: call.headers,
			...(call.body === undefined ? {} : { body: call.body }),
		});
		return this.#transport.handleRequest(request);
	}

	/** Ends the session and its child (DELETE, an initialize that failed, the connector stopping). */
	async end(reason: string): Promise<void> {
		if (this.#ended) return;
		this.#ended = true;
		logLine(`session ended (${this.label}): ${reason}`);
		this.#hooks.ended(this);
		await this.#transport.close();
		await this.#child.close();
	}

	#toChild(message: JSONRPCMessage): void {
		this.#routes.fromClient(message);
		this.#child.send(message).catch((error: unknown) => {
			logLine(`session ${this.label}: a message could not be written to the server process: ${String(error)}`);
		});
	}

	#toGateway(message: JSONRPCMessage): void {
		const relatedRequestId = this.#routes.fromServer(message);
		this.#transport
			.send(message, relatedRequestId === undefined ? {} : { relatedRequestId })
			.catch((error: unknown) => {
				// The call it belonged to was answered or cancelled meanwhile: nobody is left to read it.
				logLine(`session ${this.label}: a message of the server had no open stream: ${String(error)}`);
			});
	}

	/** The child exited by itself (it crashed, or quit): its calls fail, and the session is over for the gateway. */
	#childGone(): void {
		if (this.#ended) return;
		for (const call of this.#calls) call.fail("the session's server process exited; the call may have run");
		void this.end("the server process exited");
	}
}
