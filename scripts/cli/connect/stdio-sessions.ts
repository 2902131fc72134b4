/**
 * The stdio mode: one child per upstream session, so no two people share a
 * server's state. A new session (a POST `initialize` without a session id)
 * spawns the command; every later request of it goes to its own transport by
 * its `Mcp-Session-Id`; an id this connector does not hold is 404, which the
 * gateway treats as an expired upstream session. At most `maxSessions`
 * children at once.
 */
import { childEnvironment, type EnvFromHeader } from "./child-environment.ts";
import { logLine } from "./connect-log.ts";
import type { IncomingCall } from "./request-runs.ts";
import { drainingRefusal, refusal, startsSession } from "./session-refusals.ts";
import { type StdioCommand, StdioSession } from "./stdio-session.ts";

export interface StdioSessionsOptions {
	command: StdioCommand;
	maxSessions: number;
	envFromHeaders: readonly EnvFromHeader[];
	/** The environment children inherit (the connector's). */
	inherited: NodeJS.ProcessEnv;
}

export class StdioSessions {
	readonly #options: StdioSessionsOptions;
	readonly #byId = new Map<string, StdioSession>();
	/** Every live child, including one whose initialize is still under way. */
	readonly #live = new Set<StdioSession>();
	#spawning = 0;
	#draining = false;

	constructor(options: StdioSessionsOptions) {
		this.#options = options;
	}

	/** Sessions held, for `hello` and operators. */
	get size(): number {
		return this.#live.size + this.#spawning;
	}

	async handle(call: IncomingCall): Promise<Response> {
		const sessionId = call.headers.get("mcp-session-id");
		if (sessionId !== null) {
			const session = this.#byId.get(sessionId);
			return session ? session.handle(call) : refusal(call, 404, -32001, "Session not found");
		}
		if (!startsSession(call)) {
			return refusal(call, 400, -32000, "Bad Request: Mcp-Session-Id header is required");
		}
		if (this.#draining) return drainingRefusal(call);
		const { maxSessions } = this.#options;
		if (this.size >= maxSessions) {
			return refusal(call, 503, -32000, `this connector already runs ${maxSessions} sessions (--max-sessions)`);
		}
		const session = await this.#spawn(call);
		if (!session) {
			return refusal(call, 502, -32000, `the connector could not start ${this.#options.command.command}; see its log`);
		}
		const response = await session.handle(call);
		// Refused by the transport (a bad header, a bad body): no session came of it, so no child stays.
		if (session.id === undefined) await session.end("its initialize was refused");
		return response;
	}

	/** New sessions are refused from now on (the connector drains); the sessions held go on. */
	stopTakingSessions(): void {
		this.#draining = true;
	}

	/** Ends every session and its child. */
	async closeAll(reason: string): Promise<void> {
		await Promise.all([...this.#live].map((session) => session.end(reason)));
	}

	async #spawn(call: IncomingCall): Promise<StdioSession | undefined> {
		const { command, envFromHeaders, inherited } = this.#options;
		this.#spawning += 1;
		try {
			const session = await StdioSession.start(command, childEnvironment(inherited, envFromHeaders, call.headers), {
				started: (started, id) => {
					this.#byId.set(id, started);
					logLine(`session started (${started.label}); ${this.#live.size} of ${this.#options.maxSessions}`);
				},
				ended: (ended) => {
					this.#live.delete(ended);
					if (ended.id !== undefined) this.#byId.delete(ended.id);
				},
			});
			this.#live.add(session);
			return session;
		} catch (error) {
			logLine(`could not start ${command.command}: ${error instanceof Error ? error.message : String(error)}`);
			return undefined;
		} finally {
			this.#spawning -= 1;
		}
	}
}
