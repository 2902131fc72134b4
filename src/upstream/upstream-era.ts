import { DiscoverResultSchema } from "@modelcontextprotocol/core";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { declaresTasks } from "../mcp/2026-07-28/tasks-extension.ts";
import { GATEWAY_SERVER_INFO } from "../mcp/aggregate.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { isUnaddressedError } from "../mcp/jsonrpc.ts";
import { SERVER_DISCOVER } from "../mcp/methods.ts";
import { FIRST_MODERN_VERSION, type ProtocolEra, supportedVersionsOf } from "../mcp/protocol-version.ts";
import { readCapped } from "../mcp/read-capped.ts";
import { pinnedEra, type UpstreamProtocol } from "../mcp/upstream-protocol.ts";
import { type Deadline, startDeadline } from "./deadline.ts";
import { type Discovered, EraCache } from "./era-cache.ts";
import { type FetchLike, UpstreamConnection, type UpstreamSession } from "./upstream-connection.ts";
import type { UpstreamTarget } from "./upstream-target.ts";

export { type Discovered, EraCache, type EraCacheOptions } from "./era-cache.ts";

/** What identifies a server's era: its incarnation and configuration, and the operator's pin. */
export interface EraServer {
	name: string;
	generation: string;
	/** Absent in bindings older than digests: the era is then keyed by generation alone. */
	configDigest?: string | undefined;
	/** Absent means "auto". */
	protocol?: UpstreamProtocol | undefined;
}

export interface UpstreamEraOptions {
	fetcher?: FetchLike;
	/** Where answers are kept; the isolate's own cache by default. */
	cache?: EraCache;
}

/** The isolate's answers, shared by every session and request it serves. */
const isolateEras = new EraCache();

/** The probe's id; each probe is an exchange of its own, so one id serves them all. */
const DISCOVER_ID = "gw-discover";

/**
 * Which era `server` speaks. A pinned protocol answers at once; "auto" asks
 * the upstream once with `server/discover` and keeps the answer per isolate,
 * keyed by name, generation and config digest, so concurrent lookups share
 * one probe and a new incarnation or configuration is asked again.
 *
 * Evidence follows the spec's fallback rules (basic/versioning and the
 * streamable HTTP transport's "Backward Compatibility"): a DiscoverResult
 * listing 2026-07-28, or a -32022 whose `supported` lists it, is modern;
 * any other reply the upstream gives to the probe (a 4xx without a modern
 * error, -32022 naming only other versions, a body that is not JSON-RPC) is
 * legacy. What says nothing of the era throws, and is not remembered: the
 * network failing or timing out, an event stream cut off before its response
 * (`upstream_unavailable`, `upstream_timeout`), a 401/403 or a 5xx, a
 * redirect (never followed), an over-size reply.
 *
 * @example
 * const era = await upstreamEra(target, member);
 * if (era === "modern") ...; else ... // initialize an upstream session
 */
export async function upstreamEra(
	target: UpstreamTarget,
	server: EraServer,
	options: UpstreamEraOptions = {},
): Promise<ProtocolEra> {
	const pinned = pinnedEra(server.protocol ?? "auto");
	if (pinned) return pinned;
	return (await discovered(target, server, options)).era;
}

/**
 * Whether `server` holds tasks itself: it speaks 2026-07-28 and its
 * `server/discover` advertises the tasks extension (SEP-2663). Learned by the
 * same probe as the era, and kept beside it; a server pinned to 2025 never does.
 */
export async function upstreamHoldsTasks(
	target: UpstreamTarget,
	server: EraServer,
	options: UpstreamEraOptions = {},
): Promise<boolean> {
	if (pinnedEra(server.protocol ?? "auto") === "legacy") return false;
	const found = await discovered(target, server, options);
	return found.era === "modern" && found.tasks;
}

function discovered(target: UpstreamTarget, server: EraServer, options: UpstreamEraOptions): Promise<Discovered> {
	const key = JSON.stringify([server.name, server.generation, server.configDigest ?? ""]);
	// The target is built for one request (or one session object's member): its lookups share one probe.
	return (options.cache ?? isolateEras).lookup(
		key,
		async () => {
			const answer = await probe(target, options.fetcher);
			if ("refused" in answer) throw answer.error;
			return { era: answer.era, tasks: answer.tasks };
		},
		target,
	);
}

/** What one probe of a server showed, for its operator (the admin API's `check`). */
export interface UpstreamCheck {
	/** It answered over HTTP (whatever it answered). */
	reachable: boolean;
	/** It answered the probe in JSON-RPC, as an MCP server does. */
	speaksMcp: boolean;
	/** The era the gateway speaks to it, as discovered (or pinned); null when the answer says nothing of it. */
	era: (typeof ERA_IN_CHECKS)[ProtocolEra] | null;
	/** What it answered, or why it could not be asked, in a sentence. */
	detail: string;
}

/**
 * The check's request was refused with 401 or 403: the credentials it carried
 * (the server's configured headers, nobody's own) were not enough. Whether
 * that is a fault depends on whose credentials the server takes, which the
 * caller of `checkUpstream` knows.
 */
export interface CheckRefused {
	refused: 401 | 403;
	/** The refusal as the gateway's error says it. */
	detail: string;
}

/** How the admin API's check names an era (its published field predates the SDK's words). */
const ERA_IN_CHECKS = { modern: FIRST_MODERN_VERSION, legacy: "2025" } as const satisfies Record<ProtocolEra, string>;

/** A check answers within this, whatever the server's own timeout: an operator is waiting for it. */
const CHECK_TIMEOUT_MS = 5_000;

/**
 * Asks the server once, as the era probe does (`server/discover`, no
 * redirect followed, the reply capped), under a short timeout, and says what
 * it found. The answer is not remembered: clients' requests still discover
 * the era for themselves. A pinned protocol is reported as the era the
 * gateway uses, with what the server said beside it. A 401 or 403 comes back
 * as `CheckRefused`, for the caller to judge by whose credentials the server takes.
 */
export async function checkUpstream(
	target: UpstreamTarget,
	protocol: UpstreamProtocol = "auto",
	fetcher?: FetchLike,
): Promise<UpstreamCheck | CheckRefused> {
	const bounded = { ...target, timeoutMs: Math.min(target.timeoutMs, CHECK_TIMEOUT_MS) };
	let answer: ProbeAnswer | AuthWall;
	try {
		answer = await probe(bounded, fetcher);
	} catch (error) {
		if (!(error instanceof GatewayError)) throw error;
		const reachable = error.kind !== "upstream_unavailable" && error.kind !== "upstream_timeout";
		return { reachable, speaksMcp: false, era: null, detail: error.message };
	}
	if ("refused" in answer) return { refused: answer.refused, detail: answer.error.message };
	const said = `It answered server/discover with HTTP ${answer.status}: ${answer.evidence}`;
	if (!answer.jsonRpc) {
		return {
			reachable: true,
			speaksMcp: false,
			era: null,
			detail: `${said}, so it does not look like an MCP endpoint; is the URL its Streamable HTTP endpoint?`,
		};
	}
	const era = pinnedEra(protocol) ?? answer.era;
	const note =
		era !== answer.era
			? `; its protocol is pinned to ${protocol}, which the gateway speaks instead`
			: era === "legacy"
				? "; the gateway opens 2025 sessions with it (initialize)"
				: "";
	return { reachable: true, speaksMcp: true, era: ERA_IN_CHECKS[era], detail: `${said}${note}.` };
}

/**
 * The probe goes out as a 2026-07-28 request of the gateway's own: the
 * connection adds the envelope (the gateway naming itself as it does to its
 * clients, no capabilities) and the standard headers.
 */
const PROBE_SESSION: UpstreamSession = {
	era: "modern",
	sessionId: null,
	protocolVersion: FIRST_MODERN_VERSION,
	client: { info: GATEWAY_SERVER_INFO, capabilities: {} },
};

/** What one `server/discover` showed: the era, in words why, and whether the answer was JSON-RPC at all. */
interface ProbeAnswer {
	era: ProtocolEra;
	/** Its capabilities name the tasks extension. */
	tasks: boolean;
	evidence: string;
	status: number;
	jsonRpc: boolean;
}

/** The probe met a 401 or 403: no evidence of the era, and the error that says so. */
interface AuthWall {
	refused: 401 | 403;
	error: GatewayError;
}

/** One probe, under the target's timeout. */
async function probe(target: UpstreamTarget, fetcher: FetchLike | undefined): Promise<ProbeAnswer | AuthWall> {
	const connection = new UpstreamConnection(target, fetcher);
	const deadline = startDeadline(target.timeoutMs);
	try {
		const response = await connection.post(
			PROBE_SESSION,
			{ jsonrpc: "2.0", id: DISCOVER_ID, method: SERVER_DISCOVER },
			deadline,
		);
		// An auth wall or a failing server is not the discover handler speaking; ask again later.
		const { status } = response;
		if (status === 401 || status === 403) {
			await response.body?.cancel();
			return { refused: status, error: connection.statusError(status, SERVER_DISCOVER) };
		}
		if (response.status >= 500) {
			await response.body?.cancel();
			throw connection.statusError(response.status, SERVER_DISCOVER);
		}
		// A refusal in JSON that is no reply to the probe may still be JSON-RPC (a 2025 server's
		// `"id": null` error): a copy is kept to tell, which says whether it speaks MCP at all.
		const refusal =
			!response.ok && response.headers.get("content-type")?.includes("application/json") ? response.clone() : null;
		const reply = await readProbeReply(connection, response, deadline).catch(async (error: unknown) => {
			await refusal?.body?.cancel();
			throw error;
		});
		const unaddressed = reply === null && refusal !== null && (await refusalIsJsonRpc(refusal, target.maxReplyBytes));
		if (reply !== null) await refusal?.body?.cancel();
		const { era, evidence } = eraOf(reply, unaddressed);
		const jsonRpc = reply !== null || unaddressed;
		const answer: ProbeAnswer = { era, tasks: holdsTasks(reply), evidence, status: response.status, jsonRpc };
		console.log(probeLogLine(target.name, answer, unaddressed || (reply !== null && "error" in reply)));
		return answer;
	} finally {
		deadline.clear();
	}
}

/**
 * The operator's line for one probe: what the gateway learned, in the era's own name. A 2025
 * server refusing `server/discover` (HTTP 400, -32601, an error answering no request) is how the
 * probe works, not a failure, so that refusal is told as the evidence it is.
 */
function probeLogLine(server: string, answer: ProbeAnswer, refused: boolean): string {
	const evidence = `HTTP ${answer.status}, ${answer.evidence}`;
	if (answer.era === "modern")
		return `upstream ${server}: speaks MCP ${FIRST_MODERN_VERSION} (server/discover: ${evidence})`;
	const how = "the gateway opens 2025 sessions with it (initialize)";
	if (!answer.jsonRpc) return `upstream ${server}: no JSON-RPC answer to server/discover (${evidence}); ${how}`;
	const said = refused ? "refused server/discover, as 2025 servers do" : "answered server/discover";
	return `upstream ${server}: speaks MCP 2025, ${how}; it ${said} (${evidence})`;
}

/** The probe's reply, or null when the body holds no JSON-RPC response to it (no era evidence). */
async function readProbeReply(
	connection: UpstreamConnection,
	response: Response,
	deadline: Deadline,
): Promise<JSONRPCMessage | null> {
	try {
		return (await connection.readReply(response, DISCOVER_ID)).message;
	} catch (error) {
		if (deadline.signal.aborted) throw connection.midStreamError(error, true);
		if (!(error instanceof GatewayError)) throw connection.midStreamError(error, false);
		if (error.kind !== "upstream_error") throw error;
		// An event stream that ended before its response was cut off, as a dropped connection is:
		// no evidence either way (the SDK's own probe classifier says the same of a close).
		if (response.headers.get("content-type")?.includes("text/event-stream")) {
			throw connection.midStreamError(error, false);
		}
		// Any other body that is no JSON-RPC response to the probe: not a modern server's answer.
		return null;
	}
}

/** Whether a refusal's body is a JSON-RPC error that answers no request (read under the reply cap). */
async function refusalIsJsonRpc(refusal: Response, cap: number): Promise<boolean> {
	if (!refusal.body) return false;
	try {
		const bytes = await readCapped(refusal.body, cap);
		return bytes !== null && isUnaddressedError(new TextDecoder().decode(bytes));
	} catch (error) {
		// The copy of a body already read whole cannot fail but by the connection's end: no evidence.
		console.warn(`upstream probe: the refusal's copy could not be read: ${describeError(error)}`);
		return false;
	}
}

/** Whether a DiscoverResult advertises the tasks extension. */
function holdsTasks(reply: JSONRPCMessage | null): boolean {
	if (reply === null || !("result" in reply)) return false;
	const discovered = DiscoverResultSchema.safeParse(reply.result);
	return discovered.success && declaresTasks(discovered.data.capabilities);
}

function eraOf(reply: JSONRPCMessage | null, unaddressed: boolean): { era: ProtocolEra; evidence: string } {
	if (reply === null) {
		return { era: "legacy", evidence: unaddressed ? "a JSON-RPC error answering no request" : "no JSON-RPC response" };
	}
	if ("result" in reply) {
		const discovered = DiscoverResultSchema.safeParse(reply.result);
		if (!discovered.success) return { era: "legacy", evidence: "a result that is not a DiscoverResult" };
		const versions = discovered.data.supportedVersions;
		return versions.includes(FIRST_MODERN_VERSION)
			? { era: "modern", evidence: `supported versions ${versions.join(", ")}` }
			: { era: "legacy", evidence: `supported versions ${versions.join(", ") || "(none)"}` };
	}
	const supported = "error" in reply ? supportedVersionsOf(reply.error) : null;
	if (supported !== null) {
		return {
			era: supported.includes(FIRST_MODERN_VERSION) ? "modern" : "legacy",
			evidence: `unsupported protocol version, supported: ${supported.join(", ") || "(not listed)"}`,
		};
	}
	return { era: "legacy", evidence: "error" in reply ? `JSON-RPC error ${reply.error.code}` : "no result" };
}
