import type { JSONRPCRequest, ProgressToken, RequestId } from "@modelcontextprotocol/sdk/types.js";
import { GatewayError } from "../../mcp/gateway-error.ts";
import type { RunningCall } from "../running-call.ts";

/**
 * The requests an aggregate forwarded and whose replies have not ended, by
 * request id and by progress token, so a client's cancellation reaches the
 * member running the request and a member's progress reaches the client only
 * for its own requests. Both maps hold only running requests: an entry is
 * removed however its forward ends.
 */
export class ForwardedRequests {
	private readonly inFlight = new Map<RequestId, string>();
	private readonly progress = new Map<ProgressToken, string>();

	/**
	 * Remembers `message` as sent to `server` until `call` ends. A progress
	 * token already used by a running request is refused before anything is kept.
	 */
	track(server: string, message: JSONRPCRequest, call: RunningCall): void {
		const token = message.params?._meta?.progressToken;
		if (token !== undefined) {
			const holder = this.progress.get(token);
			if (holder !== undefined) {
				throw new GatewayError(
					"invalid_params",
					"Invalid params: this progress token is already used by a running request; use a new token per request.",
				);
			}
			this.progress.set(token, server);
		}
		this.inFlight.set(message.id, server);
		call.onEnd(() => {
			if (this.inFlight.get(message.id) === server) this.inFlight.delete(message.id);
			if (token !== undefined) this.progress.delete(token);
		});
	}

	/** The member running the request with this id, if one is. */
	serverOf(requestId: RequestId): string | undefined {
		return this.inFlight.get(requestId);
	}

	/** Whether `token` belongs to a request forwarded to `server`. */
	progressOf(server: string, token: ProgressToken): boolean {
		return this.progress.get(token) === server;
	}
}
