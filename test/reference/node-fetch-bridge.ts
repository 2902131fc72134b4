/**
 * Serves a web-standard `fetch` handler from `node:http`: the SDK v2 server
 * entry points (`createMcpHandler`, `WebStandardStreamableHTTPServerTransport`)
 * speak `Request`/`Response`, and the SDK's own Node adapter is a package this
 * project does not install for one loopback fixture.
 *
 * Responses stream through as the handler produces them (SSE events reach the
 * client one by one), and a client that hangs up aborts the request's signal,
 * which is how the SDK learns a stream's reader is gone.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";

export type FetchHandler = (request: Request) => Promise<Response>;

export interface RunningHttpServer {
	port: number;
	close(): Promise<void>;
}

/** Methods whose requests carry no body (the Request constructor refuses one for them). */
const BODYLESS = new Set(["GET", "HEAD"]);

/** The Node request as a web Request; `signal` fires when the client goes away. */
function toWebRequest(req: IncomingMessage, signal: AbortSignal): Request {
	const headers = new Headers();
	for (const [name, value] of Object.entries(req.headers)) {
		if (Array.isArray(value)) for (const item of value) headers.append(name, item);
		else if (value !== undefined) headers.set(name, value);
	}
	const url = new URL(req.url ?? "/", `http://${req.headers.host ?? "localhost"}`);
	const method = req.method ?? "GET";
	if (BODYLESS.has(method)) return new Request(url, { method, headers, signal });
	return new Request(url, {
		method,
		headers,
		signal,
		body: Readable.toWeb(req) as ReadableStream<Uint8Array>,
		// Node's fetch requires this for a streamed request body.
		duplex: "half",
	} as RequestInit);
}

/** Writes the web Response to the Node response, chunk by chunk, until either side ends. */
async function writeWebResponse(response: Response, res: ServerResponse): Promise<void> {
	const headers: Record<string, string> = {};
	response.headers.forEach((value, name) => {
		headers[name] = value;
	});
	// An empty statusText (the fetch default) would send a blank reason phrase; Node fills in the standard one.
	res.writeHead(response.status, response.statusText || undefined, headers);
	res.flushHeaders();
	if (!response.body) {
		res.end();
		return;
	}
	const reader = response.body.getReader();
	res.on("close", () => {
		// The client left: stop pulling, so the SDK sees its stream cancelled.
		if (!res.writableFinished) reader.cancel().catch((error: unknown) => reportBridgeError(error));
	});
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		if (res.destroyed) return;
		res.write(value);
	}
	res.end();
}

function reportBridgeError(error: unknown): void {
	// An aborted stream ends in an AbortError on one side or the other; that is a client leaving, not a fault.
	if (error instanceof Error && error.name === "AbortError") return;
	console.error("conformance reference:", error);
}

/** Listens on `host:port` (0: a free port) and answers every request with `handler`. */
export async function serveFetch(handler: FetchHandler, host: string, port: number): Promise<RunningHttpServer> {
	const server: Server = createServer((req, res) => {
		const abort = new AbortController();
		res.on("close", () => {
			if (!res.writableFinished) abort.abort();
		});
		handler(toWebRequest(req, abort.signal))
			.then((response) => writeWebResponse(response, res))
			.catch((error: unknown) => {
				reportBridgeError(error);
				if (!res.headersSent) res.writeHead(500, { "content-type": "text/plain" }).end("internal error");
				else res.destroy();
			});
	});
	await new Promise<void>((resolve) => server.listen(port, host, resolve));
	return {
		port: (server.address() as AddressInfo).port,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
