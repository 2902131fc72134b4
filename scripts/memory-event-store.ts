/**
 * An in-memory event store for the SDK's StreamableHTTPServerTransport: with
 * it, a server's SSE replies carry event ids (starting with a priming event)
 * and a client that lost a stream can resume it with GET and Last-Event-ID
 * (2025-11-25 transport, SEP-1699). Used by the tests' resumable upstream and
 * by the conformance reference's 2025 sessions (test/reference/legacy-sessions.ts),
 * whose SDK v2 transport takes the same EventStore shape; one store per session.
 */
import type { EventId, EventStore, StreamId } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/**
 * Events of one session, kept so a client that lost an SSE stream can resume
 * it with Last-Event-ID. Ids are `<stream>::<index>`, so the stream of an id is
 * known without a lookup.
 */
export class MemoryEventStore implements EventStore {
	private readonly streams = new Map<StreamId, JSONRPCMessage[]>();

	async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
		const events = this.streams.get(streamId) ?? [];
		events.push(message);
		this.streams.set(streamId, events);
		return `${streamId}::${events.length}`;
	}

	async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
		return parseEventId(eventId)?.streamId;
	}

	async replayEventsAfter(
		lastEventId: EventId,
		{ send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
	): Promise<StreamId> {
		const parsed = parseEventId(lastEventId);
		const events = parsed ? this.streams.get(parsed.streamId) : undefined;
		if (!parsed || !events) throw new Error(`unknown event id ${lastEventId}`);
		for (let index = parsed.count; index < events.length; index++) {
			const message = events[index];
			// Priming events are stored as `{}`: they carry an id, not a message.
			if (message && Object.keys(message).length > 0) await send(`${parsed.streamId}::${index + 1}`, message);
		}
		return parsed.streamId;
	}
}

function parseEventId(eventId: EventId): { streamId: StreamId; count: number } | undefined {
	const match = /^(.+)::(\d+)$/.exec(eventId);
	return match?.[1] && match[2] ? { streamId: match[1], count: Number(match[2]) } : undefined;
}
