import type { InitializeRequest, InitializeResult, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Settings } from "../config.ts";
import { type CredentialCaller, credentialsFor } from "../credentials/credentials-for.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { INITIALIZE } from "../mcp/methods.ts";
import type { WaitUntil } from "../primitives/wait-until.ts";
import { telemetryFor } from "../telemetry/telemetry.ts";
import { UpstreamConnection, type UpstreamSession } from "../upstream/upstream-connection.ts";
import { resolveTarget, targetLimitsOf } from "../upstream/upstream-target.ts";
import { forEachBounded } from "./aggregate/bounded.ts";
import type { Member } from "./binding.ts";

/** What a member's initialize reply tells the aggregate. */
export interface MemberHello {
	session: UpstreamSession;
	result: InitializeResult;
}

/**
 * The SessionDO's connections to its members. Connections are cheap objects;
 * upstream sessions are opened single-flight, so concurrent first uses of a
 * member share one initialize.
 */
export class UpstreamPool {
	private readonly connections = new Map<string, UpstreamConnection>();
	private readonly opening = new Map<string, Promise<MemberHello>>();
	/** Requests of connections already replaced, so cost reports keep counting them. */
	private replacedRequests = 0;

	constructor(
		private readonly env: Env,
		private readonly settings: Settings,
		/** Who the session's requests are for now: each request's credentials are made for them. */
		private readonly calling: () => CredentialCaller | null = () => null,
		/** Where the export of its requests' spans runs (none: they are not traced). */
		private readonly waitUntil?: WaitUntil,
	) {}

	connection(member: Member): UpstreamConnection {
		let connection = this.connections.get(member.name);
		if (!connection) {
			const target = {
				...resolveTarget(member, this.env, targetLimitsOf(this.settings)),
				credentials: credentialsFor(member, this.calling, this.env, this.settings) ?? undefined,
				traced: this.waitUntil ? { telemetry: telemetryFor(this.env), waitUntil: this.waitUntil } : undefined,
			};
			connection = new UpstreamConnection(target, undefined, () => member.protocol ?? "auto");
			this.connections.set(member.name, connection);
		}
		return connection;
	}

	/** Forgets the member's connection: its configuration changed, the next use builds one from the new. */
	replace(member: Member): void {
		this.replacedRequests += this.connections.get(member.name)?.requests ?? 0;
		this.connections.delete(member.name);
	}

	/**
	 * Opens an upstream session with the member (initialize + initialized).
	 * Concurrent callers share one handshake. Throws a GatewayError naming the
	 * member when it is unreachable, refuses, or negotiates a version this
	 * gateway cannot speak.
	 */
	open(member: Member, params: InitializeRequest["params"]): Promise<MemberHello> {
		let opening = this.opening.get(member.name);
		if (!opening) {
			opening = this.handshake(member, params).finally(() => this.opening.delete(member.name));
			this.opening.set(member.name, opening);
		}
		return opening;
	}

	/** Upstream requests sent by this pool's connections so far. */
	get requests(): number {
		let total = this.replacedRequests;
		for (const connection of this.connections.values()) total += connection.requests;
		return total;
	}

	/** Ends every given upstream session, best effort, at most six at a time. */
	async closeAll(members: readonly Member[], sessions: Record<string, UpstreamSession>): Promise<void> {
		await forEachBounded(members, async (member) => {
			const session = sessions[member.name];
			if (session) await this.connection(member).close(session);
		});
	}

	private async handshake(member: Member, params: InitializeRequest["params"]): Promise<MemberHello> {
		const connection = this.connection(member);
		const message: JSONRPCRequest = { jsonrpc: "2.0", id: `gw-init-${member.name}`, method: INITIALIZE, params };
		const opened = await connection.initialize({ message, params });
		if (!opened.session) {
			const reason = "error" in opened.reply ? opened.reply.error.message : "no result";
			throw new GatewayError("upstream_error", `Upstream server '${member.name}' refused initialize: ${reason}.`, {
				server: member.name,
			});
		}
		return { session: opened.session, result: opened.result };
	}
}
