import type { JSONRPCNotification, JSONRPCRequest, ProgressToken, RequestId } from "@modelcontextprotocol/sdk/types.js";
import type { ClientNotification, ClientResponse, NotificationOf } from "../../mcp/client-message.ts";
import { NOTIFICATIONS_PROGRESS } from "../../mcp/methods.ts";
import type { Clock } from "../../primitives/clock.ts";
import { randomToken } from "../../primitives/crypto.ts";

/** A member's request to the client, waiting for the client's answer. */
interface Pending {
	server: string;
	/** The id the member gave it. */
	id: RequestId;
	/** The member's progress token, if it asked for progress (the client sees the minted id instead). */
	progressToken: ProgressToken | undefined;
	/** The stream of the client's call it belongs to; null: it came on the member's listening stream. */
	call: string | null;
	expiresAt: number;
}

/** What a client message turns into for a member. */
export interface ForMember {
	server: string;
	message: ClientNotification | ClientResponse;
}

/**
 * Requests members of an aggregate send to the client (sampling, elicitation,
 * roots, ping). Each reaches the client under an id the gateway mints (128
 * random bits, so it cannot be guessed or forged, and two members' ids never
 * collide); the client's answer goes back to that member under the member's
 * own id. Bounded per member, and forgotten when the call they belong to
 * ends, when they expire, or when the session ends.
 */
export class ServerRequests {
	private readonly pending = new Map<string, Pending>();

	constructor(private readonly options: { max: number; ttlMs: number; clock: () => Clock }) {}

	get size(): number {
		return this.pending.size;
	}

	/**
	 * The member's request as the client gets it, or null when the member
	 * already has its maximum of pending requests in this session (the member
	 * is then answered with an error by the caller).
	 */
	toClient(server: string, request: JSONRPCRequest, call: string | null): JSONRPCRequest | null {
		this.expire();
		// Bounded per member, so a member flooding the client does not crowd out the others.
		let own = 0;
		for (const pending of this.pending.values()) if (pending.server === server) own++;
		if (own >= this.options.max) return null;
		const minted = `gw-${randomToken(16)}`;
		const meta = request.params?._meta;
		const progressToken = meta?.progressToken;
		this.pending.set(minted, {
			server,
			id: request.id,
			progressToken,
			call,
			expiresAt: this.options.clock().now() + this.options.ttlMs,
		});
		const params =
			request.params && progressToken !== undefined
				? { ...request.params, _meta: { ...meta, progressToken: minted } }
				: request.params;
		return { ...request, id: minted, ...(params ? { params } : {}) };
	}

	/** The client's response, for the member that asked; null when the id is not a pending request of this session. */
	answer(response: ClientResponse): ForMember | null {
		const { id } = response.message;
		if (typeof id !== "string") return null;
		const pending = this.pending.get(id);
		if (!pending) return null;
		this.pending.delete(id);
		if (pending.expiresAt < this.options.clock().now()) return null;
		return { server: pending.server, message: { ...response, message: { ...response.message, id: pending.id } } };
	}

	/** Progress the client reports on a member's request: to that member, under the member's token. */
	progress(message: NotificationOf<typeof NOTIFICATIONS_PROGRESS>): ForMember | null {
		const token = message.params.progressToken;
		const pending = typeof token === "string" ? this.pending.get(token) : undefined;
		if (!pending || pending.progressToken === undefined) return null;
		const mapped = { ...message, params: { ...message.params, progressToken: pending.progressToken } };
		return {
			server: pending.server,
			message: { kind: "notification", method: NOTIFICATIONS_PROGRESS, message: mapped },
		};
	}

	/** A member cancelling its own request: the client is told under the minted id; null if it is not pending. */
	cancelled(server: string, message: JSONRPCNotification): JSONRPCNotification | null {
		const requestId = message.params?.requestId;
		for (const [minted, pending] of this.pending) {
			if (pending.server === server && pending.id === requestId) {
				this.pending.delete(minted);
				return { ...message, params: { ...message.params, requestId: minted } };
			}
		}
		return null;
	}

	/** The client's call ended: requests made on its behalf can no longer be answered usefully. */
	callEnded(call: string): void {
		for (const [minted, pending] of this.pending) if (pending.call === call) this.pending.delete(minted);
	}

	clear(): void {
		this.pending.clear();
	}

	private expire(): void {
		const now = this.options.clock().now();
		for (const [minted, pending] of this.pending) if (pending.expiresAt < now) this.pending.delete(minted);
	}
}
