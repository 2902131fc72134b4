import { BREAK_HEADER, breakText, breakToken } from "./broken-reply.ts";
import { refusal, WENT_AWAY } from "./connector-refusal.ts";

/** Statuses whose Response has no body (the Response constructor refuses one). */
const NULL_BODY = new Set([204, 205, 304]);

const encoder = new TextEncoder();

/**
 * One request carried over a connector's socket: the `Response` its caller
 * awaits, made when the `response` frame arrives, and the body stream its
 * `chunk` frames feed until `end`. A `fail` frame, or the socket closing,
 * ends it: before the response as the object's 502 refusal, after it by
 * ending the body where it broke off.
 */
export class CarriedRequest {
	readonly answer: Promise<Response>;
	private resolve!: (response: Response) => void;
	private controller: ReadableStreamDefaultController<Uint8Array> | null = null;
	private phase: "waiting" | "streaming" | "done" = "waiting";
	/** The token of this reply's break mark (broken-reply.ts), named to the connector fetch in the head. */
	private readonly breakToken = breakToken();

	constructor(
		/** The caller stopped reading: tell the connector (a `cancel` frame) and forget the stream. */
		private readonly onCancel: () => void,
	) {
		this.answer = new Promise((resolve) => {
			this.resolve = resolve;
		});
	}

	get done(): boolean {
		return this.phase === "done";
	}

	/** The `response` frame: status and headers; the body follows. */
	respond(status: number, headers: Array<[string, string]>): void {
		if (this.phase !== "waiting") return;
		if (status < 200) {
			this.fail(`the connector answered HTTP ${status}, which is not an answer`);
			return;
		}
		const head = new Headers();
		for (const [name, value] of headers) head.append(name, value);
		if (NULL_BODY.has(status)) {
			head.delete(BREAK_HEADER);
			this.phase = "streaming";
			this.resolve(new Response(null, { status, headers: head }));
			return;
		}
		// Set, not appended: a connector's own header of that name is replaced.
		head.set(BREAK_HEADER, this.breakToken);
		const body = new ReadableStream<Uint8Array>({
			start: (controller) => {
				this.controller = controller;
			},
			cancel: () => {
				if (this.phase === "done") return;
				this.phase = "done";
				this.onCancel();
			},
		});
		this.phase = "streaming";
		this.resolve(new Response(body, { status, headers: head }));
	}

	chunk(data: string): void {
		if (this.phase === "streaming") this.controller?.enqueue(encoder.encode(data));
	}

	end(): void {
		if (this.phase !== "streaming") return;
		this.phase = "done";
		this.controller?.close();
	}

	/** The connector failed the request, or went away (`message` says which). */
	fail(message: string, reason: "failed" | "went_away" = "failed"): void {
		if (this.phase === "waiting") {
			this.phase = "done";
			this.resolve(refusal(502, message, reason));
			return;
		}
		if (this.phase !== "streaming") return;
		this.phase = "done";
		// The body ends where it broke, with the mark and the sentence (broken-reply.ts): the connector
		// fetch makes that ending its reader's error. Ending it, rather than erroring it, spares the
		// runtime an uncaught rejection on each side of the object's boundary.
		console.warn(`a connector's reply broke off: ${message}`);
		this.controller?.enqueue(encoder.encode(breakText(this.breakToken, message)));
		this.controller?.close();
	}

	/** The socket closed under it. */
	wentAway(): void {
		this.fail(WENT_AWAY, "went_away");
	}

	/** The caller aborted: nothing more is read. */
	abandon(): void {
		if (this.phase === "done") return;
		const wasWaiting = this.phase === "waiting";
		this.phase = "done";
		if (wasWaiting) this.resolve(refusal(499, "the caller went away", "failed"));
		else this.controller?.close();
	}
}
