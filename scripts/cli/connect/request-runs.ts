/**
 * The requests a connector is answering, by the id the gateway gave each:
 * one Response per request frame, streamed back as `response`, `chunk`s and
 * `end`, or `fail` with a sentence when it cannot be answered. A `cancel`
 * stops one; draining waits for the calls (POSTs) still under way.
 */

import type { z } from "zod";
import type { ConnectorFrame, RequestFrameSchema } from "../../../src/connectors/frames.ts";
import { requestHeaders, responseHeaderPairs } from "./forwarded-headers.ts";
import { chunkFrames } from "./frame-chunks.ts";

type RequestFrame = z.infer<typeof RequestFrameSchema>;

/** One request as the connector's upstream side sees it. */
export interface IncomingCall {
	method: "POST" | "GET" | "DELETE";
	/** Absent: the MCP endpoint; else a well-known document of the server (RequestFrameSchema's `path`). */
	path: RequestFrame["path"];
	headers: Headers;
	body: string | undefined;
	/** Aborted when the request is over: answered, cancelled by the gateway, or its connection lost. */
	signal: AbortSignal;
	/** Ends the request with a `fail` frame now (its server went away while answering). */
	fail(message: string): void;
}

/** Answers one call: the mode's upstream (a stdio session or an HTTP server). */
export type CallHandler = (call: IncomingCall) => Promise<Response>;

interface Run {
	method: RequestFrame["method"];
	controller: AbortController;
}

export class RequestRuns {
	readonly #runs = new Map<number, Run>();
	readonly #send: (frame: ConnectorFrame) => void;
	readonly #handler: CallHandler;
	readonly #writable: () => Promise<void>;
	#whenIdle: (() => void) | undefined;

	/** `writable` resolves when the link has room for a body's next chunk (backpressure: GatewayLink.writable). */
	constructor(send: (frame: ConnectorFrame) => void, handler: CallHandler, writable: () => Promise<void>) {
		this.#send = send;
		this.#handler = handler;
		this.#writable = writable;
	}

	/** Calls under way: POSTs. A GET is a listening stream, which never ends by itself and does not hold a drain. */
	get calls(): number {
		let count = 0;
		for (const run of this.#runs.values()) if (run.method === "POST") count += 1;
		return count;
	}

	start(frame: RequestFrame): void {
		if (this.#runs.has(frame.id)) {
			this.#send({ type: "fail", id: frame.id, message: `request ${frame.id} is already under way on this connector` });
			return;
		}
		const run: Run = { method: frame.method, controller: new AbortController() };
		this.#runs.set(frame.id, run);
		void this.#answer(frame, run).finally(() => {
			// Its signal says "over" to whoever holds the call, whatever ended it.
			run.controller.abort(new Error("answered"));
			this.#runs.delete(frame.id);
			if (this.calls === 0) this.#whenIdle?.();
		});
	}

	/** The gateway no longer wants request `id`: stop it and send nothing more for it. */
	cancel(id: number): void {
		this.#runs.get(id)?.controller.abort(new Error("cancelled by the gateway"));
	}

	/** Stops every request (the connection to the gateway is gone, or the connector stops). */
	cancelAll(reason: string): void {
		for (const run of this.#runs.values()) run.controller.abort(new Error(reason));
	}

	/** Resolves once no call is under way. */
	idle(): Promise<void> {
		if (this.calls === 0) return Promise.resolve();
		return new Promise((resolve) => {
			this.#whenIdle = resolve;
		});
	}

	async #answer(frame: RequestFrame, run: Run): Promise<void> {
		const { id } = frame;
		const { signal } = run.controller;
		let finished = false;
		const finish = (last: ConnectorFrame | undefined) => {
			if (finished) return;
			finished = true;
			if (last && !signal.aborted) this.#send(last);
		};
		const call: IncomingCall = {
			method: frame.method,
			path: frame.path,
			headers: requestHeaders(frame.headers),
			body: frame.body,
			signal,
			fail: (message) => {
				finish({ type: "fail", id, message });
				run.controller.abort(new Error(message));
			},
		};
		try {
			const response = await this.#handler(call);
			if (finished || signal.aborted) {
				await response.body?.cancel();
				return;
			}
			this.#send({ type: "response", id, status: response.status, headers: responseHeaderPairs(response.headers) });
			if (response.body) await this.#stream(id, response.body, signal, () => finished);
			finish({ type: "end", id });
		} catch (error) {
			finish({ type: "fail", id, message: failureSentence(error) });
		}
	}

	async #stream(
		id: number,
		body: ReadableStream<Uint8Array>,
		signal: AbortSignal,
		finished: () => boolean,
	): Promise<void> {
		const reader = body.getReader();
		const stop = () => {
			reader.cancel(signal.reason).catch((error: unknown) => {
				// The body's source is already gone; there is nothing left to stop.
				void error;
			});
		};
		signal.addEventListener("abort", stop, { once: true });
		const decoder = new TextDecoder();
		try {
			for (;;) {
				const { done, value } = await reader.read();
				if (finished() || signal.aborted) return;
				const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
				for (const chunk of chunkFrames(id, text)) {
					// The next chunk (and the next read of the upstream) waits while the gateway reads slowly.
					await this.#writable();
					if (finished() || signal.aborted) return;
					this.#send(chunk);
				}
				if (done) return;
			}
		} finally {
			signal.removeEventListener("abort", stop);
		}
	}
}

function failureSentence(error: unknown): string {
	const message = error instanceof Error ? error.message : String(error);
	return `the connector could not answer: ${message}`.slice(0, 4096);
}
