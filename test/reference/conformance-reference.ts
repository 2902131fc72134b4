/**
 * The conformance reference: an MCP server built with SDK v2 that speaks both
 * protocol eras and offers everything the server scenarios of the official
 * conformance suite (`@modelcontextprotocol/conformance`) call, for the
 * 2025-11-25 and the 2026-07-28 requirement sets. `npm run conformance` puts
 * it behind the gateway (and runs it alone with `--direct`, as the baseline
 * that shows a failure through the gateway is the gateway's).
 *
 * Each request's era is decided once, by the SDK's own classifier
 * (`isLegacyRequest`): 2025 traffic goes to sessionful streamable HTTP
 * (legacy-sessions.ts), 2026-07-28 traffic to `createMcpHandler` in strict
 * mode. Both build their servers from one definition (reference-server.ts).
 * In front of both, as a local server must, a Host that does not name this
 * machine is refused (DNS rebinding, dns-rebinding-protection).
 *
 *   node test/reference/conformance-reference.ts [port]   run it alone (default: a free port)
 */
import { randomBytes } from "node:crypto";
import {
	createMcpHandler,
	createRequestStateCodec,
	hostHeaderValidationResponse,
	InMemoryServerEventBus,
	isLegacyRequest,
	localhostAllowedHostnames,
} from "@modelcontextprotocol/server";
import type { FlowState } from "./input-requests.ts";
import { LegacySessions } from "./legacy-sessions.ts";
import { serveFetch } from "./node-fetch-bridge.ts";
import { createReferenceServer } from "./reference-server.ts";

/** The only path served; anything else is 404. */
const MCP_PATH = "/mcp";
const HOST = "127.0.0.1";

export interface RunningConformanceReference {
	port: number;
	/** The MCP endpoint, e.g. http://127.0.0.1:PORT/mcp. */
	url: string;
	close(): Promise<void>;
}

export interface ConformanceReferenceOptions {
	/** 0 (the default): a free port. */
	port?: number;
	/**
	 * Print every error the 2026-07-28 handler reports. Off by default: it
	 * reports each request it refuses, and the suite sends many on purpose
	 * (bad envelopes, tampered state, undeclared capabilities).
	 */
	logHandlerErrors?: boolean;
}

/** Starts the reference on loopback; resolves once it listens. */
export async function startConformanceReference(
	options: ConformanceReferenceOptions = {},
): Promise<RunningConformanceReference> {
	const bus = new InMemoryServerEventBus();
	// One random key per process: every round of a flow is served by this process, so every round can verify.
	const codec = createRequestStateCodec<FlowState>({ key: randomBytes(32) });
	const modern = createMcpHandler((ctx) => createReferenceServer({ era: ctx.era, bus, codec }), {
		legacy: "reject",
		bus,
		onerror: options.logHandlerErrors ? (error) => console.error(`conformance reference: ${error.message}`) : undefined,
	});
	const legacy = new LegacySessions(() => createReferenceServer({ era: "legacy", bus, codec }));

	const handle = async (request: Request): Promise<Response> => {
		if (new URL(request.url).pathname !== MCP_PATH) return new Response("Not found", { status: 404 });
		const rejected = hostHeaderValidationResponse(request, localhostAllowedHostnames());
		if (rejected) return rejected;
		return (await isLegacyRequest(request)) ? legacy.handle(request) : modern.fetch(request);
	};

	const http = await serveFetch(handle, HOST, options.port ?? 0);
	return {
		port: http.port,
		url: `http://${HOST}:${http.port}${MCP_PATH}`,
		close: async () => {
			await Promise.all([legacy.closeAll(), modern.close()]);
			await http.close();
		},
	};
}

// Run directly: `node test/reference/conformance-reference.ts [port]`, printing what the handler refuses.
if (import.meta.url === `file://${process.argv[1]}`) {
	const reference = await startConformanceReference({ port: Number(process.argv[2] ?? 0), logHandlerErrors: true });
	console.log(`conformance reference listening at ${reference.url}`);
}
