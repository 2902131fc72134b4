import type { JSONRPCNotification } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../../mcp/gateway-error.ts";
import type { ServerRecord } from "../../registry/schemas.ts";
import type { UpstreamSession } from "../../upstream/upstream-connection.ts";
import { type Member, memberOf, type SessionBinding } from "../binding.ts";
import { memberInitParams } from "../session-open.ts";
import { SESSION_NOT_FOUND } from "../session-responses.ts";
import type { SessionState } from "../session-state.ts";
import type { SessionStore } from "../session-store.ts";
import type { UpstreamPool } from "../upstream-pool.ts";
import type { Breaker } from "./breaker.ts";

/** A reconnect backoff up to this long is waited out by the request; a longer one fails it fast. */
const MAX_RECONNECT_WAIT_MS = 1_000;

/**
 * Who hears what changes of the members outside the replies the session
 * relays (the router: it keeps the session's lists of them).
 */
export interface MemberListener {
	/** A member's upstream session was opened anew or retired: what the session knows of its lists is stale. */
	sessionReplaced(server: string): void;
	/** A member's configuration changed: its lists are refetched (an aggregate's client is told of real changes). */
	memberReset(server: string): void;
	/** A member's notification seen outside any reply relayed to the client (while its list was fetched). */
	memberNotification(server: string, message: JSONRPCNotification): unknown;
}

/**
 * The session's upstream sessions, one per member: opened on first need
 * (single-flight, with backoff), retired exactly once when they expire, and
 * reopened when the member's configuration changes. Every change is one
 * write of the binding, and is told to the one who keeps the members' lists.
 */
export class MemberSessions {
	/** Set once the router is built (it is built on these sessions): see `heardBy`. */
	private listener: MemberListener | null = null;

	constructor(
		private readonly state: SessionState,
		private readonly store: SessionStore,
		private readonly pool: UpstreamPool,
		private readonly breaker: Breaker,
	) {}

	/** `listener` hears of every member's change from now on (the session's parts are wired once, at start). */
	heardBy(listener: MemberListener): void {
		this.listener = listener;
	}

	/** The member as the session knows it now. */
	member(server: string): Member {
		const member = this.state.binding?.members.find((candidate) => candidate.name === server);
		if (!member) throw new GatewayError("invalid_params", `Unknown server '${server}' in this session.`);
		return member;
	}

	/** A transparent session's one member. */
	transparentMember(binding: SessionBinding): Member {
		const member = binding.members[0];
		if (!member) throw new GatewayError("internal", "This session has no upstream server.");
		return member;
	}

	/** A request of the gateway's own to a member (not a client's: no call is counted for it); its result. */
	async request(server: string, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
		const member = this.member(server);
		return this.pool.connection(member).request(await this.session(member), method, params);
	}

	/** A member's notification seen outside a relayed reply: told to the listener. */
	noticed(server: string, message: JSONRPCNotification): void {
		this.listener?.memberNotification(server, message);
	}

	/** The member's upstream session, opening one if the member was unavailable so far. */
	async session(member: Member): Promise<UpstreamSession> {
		const binding = this.state.binding;
		if (!binding) throw new GatewayError("session_not_found", SESSION_NOT_FOUND);
		const existing = binding.upstreams[member.name];
		if (existing) return existing;
		const params = memberInitParams(binding.protocolVersion, binding.clientInfo, binding.clientCapabilities);
		const { breaker, pool } = this;
		const wait = breaker.reconnectWait(member.name);
		if (wait > MAX_RECONNECT_WAIT_MS) {
			throw new GatewayError(
				"upstream_unavailable",
				`the gateway is backing off after connection failures and reconnects in ${Math.ceil(wait / 1000)} s`,
				{ server: member.name },
			);
		}
		// A short backoff is waited out inside this request: no timer outlives it.
		if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
		let session: UpstreamSession;
		try {
			({ session } = await pool.open(member, params));
		} catch (error) {
			breaker.failure(member.name);
			throw error;
		}
		breaker.success(member.name);
		const current = this.state.binding;
		if (current && current.upstreams[member.name]?.sessionId !== session.sessionId) {
			// A new upstream session is rare (a member came back or expired): worth one write.
			const updated = { ...current, upstreams: { ...current.upstreams, [member.name]: session } };
			this.state.binding = updated;
			this.listener?.sessionReplaced(member.name);
			await this.store.writeBinding(updated);
		}
		return session;
	}

	/**
	 * Retires an upstream session that expired or closed, exactly once: only if
	 * it is still the member's current session, so a late failure from an old
	 * session never retires a newer one. The next use opens a fresh session
	 * (sent without the old id) and refetches the member's catalog.
	 */
	async retire(member: Member, session: UpstreamSession): Promise<void> {
		const binding = this.state.binding;
		const current = binding?.upstreams[member.name];
		if (!binding || !current || current.sessionId !== session.sessionId) return;
		const { [member.name]: _retired, ...rest } = binding.upstreams;
		const updated = { ...binding, upstreams: rest };
		this.state.binding = updated;
		this.listener?.sessionReplaced(member.name);
		console.log(`upstream ${member.name}: session retired; the next request opens a new one`);
		this.state.waitUntil(this.pool.connection(member).close(session));
		await this.store.writeBinding(updated);
	}

	/**
	 * Members whose configuration (URL, headers, timeout) changed: the session
	 * takes the new configuration and reopens those upstream sessions on it, so
	 * it never talks to an old URL with current secrets. An old session on an
	 * unchanged URL is closed there; one on a URL that changed gets nothing
	 * more, not even a DELETE carrying credentials.
	 */
	async configChanged(changed: readonly ServerRecord[]): Promise<void> {
		const binding = this.state.binding;
		if (!binding || changed.length === 0) return;
		const upstreams = { ...binding.upstreams };
		let members = binding.members;
		const reset: string[] = [];
		for (const server of changed) {
			const old = members.find((member) => member.name === server.name);
			if (!old) continue;
			const member = memberOf(server);
			members = members.map((candidate) => (candidate.name === server.name ? member : candidate));
			const session = upstreams[server.name];
			delete upstreams[server.name];
			this.pool.replace(member);
			this.breaker.success(member.name);
			if (session && old.url === member.url) this.state.waitUntil(this.pool.connection(member).close(session));
			reset.push(server.name);
			console.log(`upstream ${server.name}: configuration changed; this session reconnects with the new one`);
		}
		const updated = { ...binding, members, upstreams };
		this.state.binding = updated;
		for (const server of reset) this.listener?.memberReset(server);
		await this.store.writeBinding(updated);
	}
}
