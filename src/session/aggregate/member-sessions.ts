import { GatewayError } from "../../mcp/gateway-error.ts";
import type { ServerRecord } from "../../registry/schemas.ts";
import type { UpstreamSession } from "../../upstream/upstream-connection.ts";
import { type Member, memberOf, type SessionBinding } from "../binding.ts";
import { memberInitParams } from "../session-open.ts";
import { SESSION_NOT_FOUND } from "../session-responses.ts";
import type { SessionStore } from "../session-store.ts";
import type { UpstreamPool } from "../upstream-pool.ts";
import type { Breaker } from "./breaker.ts";
import type { Catalog } from "./catalog.ts";

/** A reconnect backoff up to this long is waited out by the request; a longer one fails it fast. */
const MAX_RECONNECT_WAIT_MS = 1_000;

/** What the member sessions need from their SessionDO. */
export interface MembersHost {
	readonly store: SessionStore;
	readonly pool: UpstreamPool;
	readonly catalog: Catalog;
	readonly breaker: Breaker;
	current(): SessionBinding | null | undefined;
	replace(binding: SessionBinding): void;
	/** Keeps the Durable Object alive for background work (closing an upstream session). */
	waitUntil(promise: Promise<unknown>): void;
	/** A member's lists must be refetched (its upstream session or configuration changed). */
	memberReset(server: string): void;
}

/**
 * The session's upstream sessions, one per member: opened on first need
 * (single-flight, with backoff), retired exactly once when they expire, and
 * reopened when the member's configuration changes. Every change is one
 * write of the binding.
 */
export class MemberSessions {
	constructor(private readonly host: MembersHost) {}

	/** The member as the session knows it now. */
	member(server: string): Member {
		const member = this.host.current()?.members.find((candidate) => candidate.name === server);
		if (!member) throw new GatewayError("invalid_params", `Unknown server '${server}' in this session.`);
		return member;
	}

	/** A transparent session's one member. */
	sole(binding: SessionBinding): Member {
		const member = binding.members[0];
		if (!member) throw new GatewayError("internal", "This session has no upstream server.");
		return member;
	}

	/** The member's upstream session, opening one if the member was unavailable so far. */
	async session(member: Member): Promise<UpstreamSession> {
		const binding = this.host.current();
		if (!binding) throw new GatewayError("session_not_found", SESSION_NOT_FOUND);
		const existing = binding.upstreams[member.name];
		if (existing) return existing;
		const params = memberInitParams(binding.protocolVersion, binding.clientInfo, binding.clientCapabilities);
		const { breaker, pool } = this.host;
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
		const current = this.host.current();
		if (current && current.upstreams[member.name]?.sessionId !== session.sessionId) {
			// A new upstream session is rare (a member came back or expired): worth one write.
			const updated = { ...current, upstreams: { ...current.upstreams, [member.name]: session } };
			this.host.replace(updated);
			this.host.catalog.forget(member.name);
			await this.host.store.writeBinding(updated);
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
		const binding = this.host.current();
		const current = binding?.upstreams[member.name];
		if (!binding || !current || current.sessionId !== session.sessionId) return;
		const { [member.name]: _retired, ...rest } = binding.upstreams;
		const updated = { ...binding, upstreams: rest };
		this.host.replace(updated);
		this.host.catalog.forget(member.name);
		console.log(`upstream ${member.name}: session retired; the next request opens a new one`);
		this.host.waitUntil(this.host.pool.connection(member).close(session));
		await this.host.store.writeBinding(updated);
	}

	/**
	 * Members whose configuration (URL, headers, timeout) changed: the session
	 * takes the new configuration and reopens those upstream sessions on it, so
	 * it never talks to an old URL with current secrets. An old session on an
	 * unchanged URL is closed there; one on a URL that changed gets nothing
	 * more, not even a DELETE carrying credentials.
	 */
	async configChanged(changed: readonly ServerRecord[]): Promise<void> {
		const binding = this.host.current();
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
			this.host.pool.replace(member);
			this.host.breaker.success(member.name);
			if (session && old.url === member.url) this.host.waitUntil(this.host.pool.connection(member).close(session));
			reset.push(server.name);
			console.log(`upstream ${server.name}: configuration changed; this session reconnects with the new one`);
		}
		const updated = { ...binding, members, upstreams };
		this.host.replace(updated);
		for (const server of reset) this.host.memberReset(server);
		await this.host.store.writeBinding(updated);
	}
}
