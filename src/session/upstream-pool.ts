import type { InitializeRequest, JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Settings } from "../config.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { UpstreamConnection, type UpstreamSession } from "../upstream/upstream-connection.ts";
import { resolveTarget } from "../upstream/upstream-target.ts";
import type { Member } from "./binding.ts";

/** What a member's initialize reply tells the aggregate. */
export interface MemberHello {
	session: UpstreamSession;
	result: Record<string, unknown>;
}

/**
 * The SessionDO's connections to its members. Connections are cheap objects;
 * upstream sessions are opened single-flight, so concurrent first uses of a
 * member share one initialize.
 */
export class UpstreamPool {
	private readonly connections = new Map<string, UpstreamConnection>();
	private readonly opening = new Map<string, Promise<MemberHello>>();

	constructor(
		private readonly vars: Record<string, unknown>,
		private readonly settings: Settings,
	) {}

	connection(member: Member): UpstreamConnection {
		let connection = this.connections.get(member.name);
		if (!connection) {
			connection = new UpstreamConnection(resolveTarget(member, this.vars, this.settings.upstreamTimeoutMs));
			this.connections.set(member.name, connection);
		}
		return connection;
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
		let total = 0;
		for (const connection of this.connections.values()) total += connection.requests;
		return total;
	}

	/** Ends every given upstream session, best effort, in parallel. */
	async closeAll(members: readonly Member[], sessions: Record<string, UpstreamSession>): Promise<void> {
		await Promise.all(
			members.map(async (member) => {
				const session = sessions[member.name];
				if (session) await this.connection(member).close(session);
			}),
		);
	}

	private async handshake(member: Member, params: InitializeRequest["params"]): Promise<MemberHello> {
		const connection = this.connection(member);
		const request: JSONRPCRequest = { jsonrpc: "2.0", id: `gw-init-${member.name}`, method: "initialize", params };
		const { reply, session } = await connection.initialize(request);
		if (!session || !("result" in reply)) {
			const message = "error" in reply ? String((reply.error as { message?: unknown }).message) : "no result";
			throw new GatewayError("upstream_error", `Upstream server '${member.name}' refused initialize: ${message}.`, {
				server: member.name,
			});
		}
		return { session, result: reply.result as Record<string, unknown> };
	}
}
