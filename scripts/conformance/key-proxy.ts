/**
 * The loopback proxy `npm run conformance` puts between the conformance CLI
 * and the gateway: the CLI cannot send extra headers, and the gateway wants an
 * API key on every request.
 */
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { HOST } from "../processes.ts";

export interface RunningProxy {
	url: string;
	close(): Promise<void>;
}

/** Hop-by-hop headers describe one connection: Node frames the proxied response itself. */
const HOP_BY_HOP = new Set([
	"connection",
	"keep-alive",
	"transfer-encoding",
	"proxy-connection",
	"upgrade",
	"te",
	"trailer",
]);

/** Raw headers ([name, value, name, value, ...]) without the names `drop` matches. */
function rawHeadersWithout(raw: string[], drop: (lowerName: string) => boolean): string[] {
	const kept: string[] = [];
	for (let i = 0; i + 1 < raw.length; i += 2) {
		const name = raw[i] as string;
		if (!drop(name.toLowerCase())) kept.push(name, raw[i + 1] as string);
	}
	return kept;
}

/**
 * A loopback proxy to the gateway that adds `Authorization: Bearer <key>` to
 * every request and forwards every other request header byte for byte, in
 * order (Host and Origin included: the gateway must judge them as the client
 * sent them). Responses stream through unbuffered, so SSE events arrive as
 * the gateway sends them, and a client hanging up ends the gateway request.
 */
export async function startKeyProxy(gateway: URL, key: string): Promise<RunningProxy> {
	const forward = (req: IncomingMessage, res: ServerResponse) => {
		const headers = [
			...rawHeadersWithout(req.rawHeaders, (name) => name === "authorization"),
			"Authorization",
			`Bearer ${key}`,
		];
		const outgoing = request(
			{
				host: gateway.hostname,
				port: gateway.port,
				method: req.method,
				path: req.url,
				headers,
				// The client's own Host goes through unchanged.
				setHost: false,
			},
			(incoming) => {
				res.writeHead(
					incoming.statusCode ?? 502,
					incoming.statusMessage,
					rawHeadersWithout(incoming.rawHeaders, (name) => HOP_BY_HOP.has(name)),
				);
				res.flushHeaders();
				incoming.pipe(res);
				// A stream the gateway broke off must look broken to the client too, not complete.
				incoming.on("aborted", () => res.destroy());
			},
		);
		outgoing.on("error", (error) => {
			if (res.headersSent) {
				res.destroy();
				return;
			}
			res
				.writeHead(502, { "content-type": "text/plain" })
				.end(`conformance proxy: gateway unreachable: ${error.message}`);
		});
		res.on("close", () => {
			if (!res.writableFinished) outgoing.destroy();
		});
		req.pipe(outgoing);
	};
	const server = createServer(forward);
	await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://${HOST}:${port}`,
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
