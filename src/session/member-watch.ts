import type { JSONRPCNotification } from "@modelcontextprotocol/sdk/types.js";
import { describeError } from "../mcp/gateway-error.ts";
import { isNotification, parseJsonRpcMessage } from "../mcp/jsonrpc.ts";
import { readSseEvents } from "../mcp/sse.ts";
import type { UpstreamConnection, UpstreamSession } from "../upstream/upstream-connection.ts";
import type { Member } from "./binding.ts";

/** At most this many members' GET streams are held open at once (Workers allow six connections). */
const MAX_WATCHED_MEMBERS = 4;
/** A member's GET stream is re-opened at most this many times in a row before its session counts as closed. */
const MAX_STREAM_REOPENS = 3;
const STREAM_REOPEN_BACKOFF_MS = 250;

/** What watching needs from the SessionDO. */
export interface WatchHost {
	connection(member: Member): UpstreamConnection;
	session(member: Member): Promise<UpstreamSession>;
	/** A notification arrived on the member's stream. */
	notify(member: Member, message: JSONRPCNotification): void;
	/** The member's stream cannot be re-opened: its upstream session counts as closed. */
	closed(member: Member): Promise<void>;
	maxEventBytes: number;
}

/**
 * The members' GET streams an aggregate SessionDO listens on while its client
 * listens on its own. Nothing here outlives the client's listening: `stop`
 * aborts every stream and every pending re-open.
 */
export class MemberWatch {
	private watching: AbortController | null = null;

	constructor(private readonly host: WatchHost) {}

	start(members: readonly Member[]): void {
		if (this.watching) return;
		const controller = new AbortController();
		this.watching = controller;
		// Streams stay open as long as the client listens; they are bounded so that calls and
		// lists always find a free outgoing connection. Members beyond the bound still deliver
		// their notifications on replies.
		for (const member of members.slice(0, MAX_WATCHED_MEMBERS)) {
			this.watch(member, controller.signal).catch((error: unknown) => {
				if (!controller.signal.aborted)
					console.warn(`member ${member.name}: event stream ended: ${describeError(error)}`);
			});
		}
	}

	stop(): void {
		this.watching?.abort();
		this.watching = null;
	}

	/**
	 * Listens on one member's GET stream. A stream that drops is re-opened
	 * with backoff; one that cannot be re-opened (non-200, 404 with a session
	 * id, retries exhausted) means the member's upstream session is closed.
	 */
	private async watch(member: Member, signal: AbortSignal): Promise<void> {
		const connection = this.host.connection(member);
		let failures = 0;
		while (!signal.aborted && failures < MAX_STREAM_REOPENS) {
			let response: Response;
			try {
				response = await connection.openStream(await this.host.session(member), null, signal);
			} catch (error) {
				if (signal.aborted) return;
				console.warn(`member ${member.name}: event stream could not be opened: ${describeError(error)}`);
				failures++;
				await sleep(STREAM_REOPEN_BACKOFF_MS * 2 ** (failures - 1));
				continue;
			}
			if (response.status === 405) {
				// The member offers no GET stream; its notifications arrive on replies only.
				await response.body?.cancel();
				return;
			}
			if (!response.ok || !response.body) {
				await response.body?.cancel();
				break;
			}
			failures = 0;
			try {
				await readSseEvents(
					response.body,
					(event) => {
						const message = parseNotification(event.data);
						if (message) this.host.notify(member, message);
						return signal.aborted;
					},
					this.host.maxEventBytes,
				);
			} catch (error) {
				if (signal.aborted) return;
				console.warn(`member ${member.name}: event stream broke: ${describeError(error)}`);
			}
			if (signal.aborted) return;
			failures++;
			await sleep(STREAM_REOPEN_BACKOFF_MS * 2 ** (failures - 1));
		}
		if (!signal.aborted) await this.host.closed(member);
	}
}

/** The notification in an SSE event's data, or null for anything else (a member's stream carries nothing else to the client). */
function parseNotification(data: string): JSONRPCNotification | null {
	const message = parseJsonRpcMessage(data);
	return message !== null && isNotification(message) ? message : null;
}

function sleep(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}
