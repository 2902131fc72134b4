import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { randomToken } from "../../primitives/crypto.ts";
import type { BufferedEvent, EventBuffer } from "./event-buffer.ts";

/** p: the reply stream of one forwarded request; g: a listening (GET) stream. */
export type StreamKind = "p" | "g";

/** Listening streams held per session; opening one more ends the oldest. */
export const MAX_CLIENT_STREAMS = 4;

/** Bytes that may wait for a client that does not read; past this its connection is dropped (it can resume). */
const MAX_UNREAD_BYTES = 1024 * 1024;

const encoder = new TextEncoder();

/** Where a stream's frames go while a client is attached: a connection, or an outbox the edge drains. */
interface Sink {
	/** False when the sink cannot take it (its client stopped reading): the stream detaches it. */
	write(frame: string): boolean;
	close(): void;
}

/** An event id names its stream and its place in it: `<stream>-<seq>`. */
export function eventId(stream: string, seq: number): string {
	return `${stream}-${seq}`;
}

/** The stream and place a Last-Event-ID names, or null if it is not one of the gateway's. */
export function parseEventId(value: string): { stream: string; seq: number } | null {
	const match = /^([pg][A-Za-z0-9_-]{11})-(\d{1,9})$/.exec(value);
	return match?.[1] && match[2] ? { stream: match[1], seq: Number(match[2]) } : null;
}

function eventFrame(stream: string, seq: number, data: string): string {
	return `id: ${eventId(stream, seq)}\nevent: message\ndata: ${data}\n\n`;
}

/**
 * One of the session's SSE streams to its client. Every event carries an id
 * and is kept in the session's EventBuffer, so a client that lost the
 * connection resumes with Last-Event-ID; the stream itself (a running call,
 * a listener) does not depend on the connection.
 */
export class LiveStream {
	private sink: Sink | null = null;
	private ended = false;

	constructor(
		readonly id: string,
		private readonly owner: ClientStreams,
		private seq = 0,
	) {}

	get kind(): StreamKind {
		return this.id[0] === "p" ? "p" : "g";
	}

	get lastSeq(): number {
		return this.seq;
	}

	get isEnded(): boolean {
		return this.ended;
	}

	send(message: JSONRPCMessage): void {
		if (this.ended) return;
		const seq = ++this.seq;
		const data = JSON.stringify(message);
		this.owner.buffer.append(this.id, seq, data);
		if (this.sink && !this.sink.write(eventFrame(this.id, seq, data))) this.detach();
	}

	/** The stream is over (its response was sent, or the session ended); the client connection closes. */
	end(): void {
		if (this.ended) return;
		this.ended = true;
		// What the client may come back for is durable before the object can fall idle.
		this.owner.buffer.flush();
		this.detach();
		this.owner.released(this);
	}

	/** A client connection for this stream, starting with `first` (priming, or missed events); replaces any earlier one. */
	connect(first: string, onClose?: () => void): ReadableStream<Uint8Array> {
		this.detach();
		// Frames are enqueued straight into the connection's stream (no writer, no promise per frame).
		let controller: ReadableStreamDefaultController<Uint8Array> | null = null;
		let closed = false;
		const sink: Sink = {
			write: (frame) => {
				if (closed || !controller) return false;
				const bytes = encoder.encode(frame);
				const room = controller.desiredSize;
				if (room !== null && room < bytes.byteLength) return false;
				controller.enqueue(bytes);
				return true;
			},
			close: () => {
				if (closed) return;
				closed = true;
				if (this.sink === sink) this.sink = null;
				try {
					controller?.close();
				} catch {
					// Already cancelled by the client: nothing left to end.
				}
				onClose?.();
			},
		};
		const readable = new ReadableStream<Uint8Array>(
			{
				start(started) {
					controller = started;
				},
				// The client going away only detaches it: the stream goes on, and the client can resume.
				cancel() {
					sink.close();
				},
			},
			new ByteLengthQueuingStrategy({ highWaterMark: MAX_UNREAD_BYTES }),
		);
		sink.write(first);
		if (this.ended) sink.close();
		else this.sink = sink;
		return readable;
	}

	/**
	 * An outbox for a connection the edge Worker holds: frames collect until
	 * `drain`. Returns null as the drain's result once the outbox overflowed
	 * (the edge then ends its connection; the client resumes from the buffer).
	 */
	outbox(): { drain(): string | null } {
		this.detach();
		let frames: string[] = [];
		let bytes = 0;
		let overflowed = false;
		const sink: Sink = {
			write: (frame) => {
				bytes += frame.length;
				if (bytes > MAX_UNREAD_BYTES) {
					overflowed = true;
					frames = [];
					return false;
				}
				frames.push(frame);
				return true;
			},
			close: () => {
				if (this.sink === sink) this.sink = null;
			},
		};
		this.sink = sink;
		return {
			drain: () => {
				if (overflowed) return null;
				const out = frames.join("");
				frames = [];
				bytes = 0;
				return out;
			},
		};
	}

	private detach(): void {
		const sink = this.sink;
		this.sink = null;
		sink?.close();
	}
}

/** What a resumption finds: the events the client missed, and the stream if it is still live. */
export interface Resumption {
	stream: LiveStream | null;
	/** The stream id the Last-Event-ID named. */
	id: string;
	missed: string;
}

/**
 * The session's live streams to its client and how they resume. A stream is
 * live while its call runs (p) or until a newer listener replaces it (g);
 * ended streams are resumed from the buffer alone.
 */
export class ClientStreams {
	private readonly byId = new Map<string, LiveStream>();
	/** Listening streams, oldest first. */
	private readonly listeners: LiveStream[] = [];

	constructor(
		readonly buffer: EventBuffer,
		private readonly options: { retryMs: number; primes: () => boolean },
	) {}

	/** A new stream. Waits only the first time an instance touches the buffer (after an eviction). */
	async open(kind: StreamKind): Promise<LiveStream> {
		await this.buffer.ready();
		return this.track(new LiveStream(kind + randomToken(8), this));
	}

	private track(stream: LiveStream): LiveStream {
		const kind = stream.kind;
		this.byId.set(stream.id, stream);
		if (kind === "g") {
			this.listeners.push(stream);
			while (this.listeners.length > MAX_CLIENT_STREAMS) this.listeners[0]?.end();
		}
		return stream;
	}

	/** The stream with this id, while it is live. */
	live(id: string): LiveStream | undefined {
		return this.byId.get(id);
	}

	/** The newest listening stream: where messages that belong to no call go. */
	listening(): LiveStream | undefined {
		return this.listeners[this.listeners.length - 1];
	}

	/**
	 * Resumes the stream a Last-Event-ID names: exactly the events after it
	 * on that stream, from the buffer. Null when that cannot be done (not one
	 * of this session's streams, or older than the buffer): the caller starts
	 * a fresh stream instead, never another stream's events.
	 */
	async resume(lastEventId: string): Promise<Resumption | null> {
		const place = parseEventId(lastEventId);
		if (!place) return null;
		await this.buffer.ready();
		let stream = this.byId.get(place.stream) ?? null;
		const missed = this.buffer.after(place.stream, place.seq, stream?.lastSeq);
		if (missed === null) return null;
		// A listening stream goes on listening under its id, even if a newer one had replaced it;
		// a call's stream that has ended only replays.
		if (!stream && place.stream[0] === "g") {
			stream = this.track(new LiveStream(place.stream, this, missed.at(-1)?.seq ?? place.seq));
		}
		return { stream, id: place.stream, missed: this.retry() + missed.map(frameOf).join("") };
	}

	/** The first frame of a new stream: its priming event (an id and `retry`, no data), for clients that expect one. */
	priming(stream: LiveStream): string {
		if (!this.options.primes()) return this.retry();
		return `id: ${eventId(stream.id, stream.lastSeq)}\nretry: ${this.options.retryMs}\ndata: \n\n`;
	}

	/** Ends every stream (the session ended). */
	closeAll(): void {
		for (const stream of [...this.byId.values()]) stream.end();
	}

	/** Called by a stream that ended. */
	released(stream: LiveStream): void {
		this.byId.delete(stream.id);
		const index = this.listeners.indexOf(stream);
		if (index !== -1) this.listeners.splice(index, 1);
	}

	private retry(): string {
		return `retry: ${this.options.retryMs}\n\n`;
	}
}

function frameOf(event: BufferedEvent): string {
	return eventFrame(event.stream, event.seq, event.data ?? "");
}
