import type { Env } from "../env.ts";
import { byName } from "../mcp/aggregate.ts";
import { describeError } from "../mcp/gateway-error.ts";
import { stableJson } from "../mcp/stable-json.ts";
import { sha256Hex } from "../primitives/crypto.ts";
import { isolateCache } from "../primitives/expiring-map.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import { registryStub } from "../registry/registry-stub.ts";
import type { PinInput, PinningMode, ServerPins } from "../registry/tool-pins.ts";
import { needsFirstSeen, type PinVerdict } from "./pinning.ts";
import { pinInputOf, type ToolLike, toolDefinition } from "./tool-digest.ts";

/**
 * The isolate's side of pinning: pins read through the registry's read path
 * and kept per isolate, the first-seen write bounded per isolate, and the log
 * lines of tools not as approved, each said once in a while.
 */

/** The server a pin belongs to: its name and incarnation. */
export interface PinnedServer {
	name: string;
	generation: string;
	/** Absent in bindings older than pinning: the default. */
	pinning?: PinningMode | undefined;
}

/** Pins records by server, per isolate; a server never recorded is kept as null for as long. */
const pinRecords = isolateCache<ServerPins | null>({ maxEntries: 1_000 });

/**
 * The server's pins from KV (`pins/<name>`), from the isolate's memory for
 * `ttlMs` after a read (the endpoint TTL: a pin approved reaches lists within
 * it, plus KV's own staleness). Pins of another incarnation count as none.
 * A KV failure rejects, as every registry read does (the caller's 503).
 */
export async function pinsFor(reader: RegistryReader, server: PinnedServer, ttlMs: number): Promise<ServerPins | null> {
	const pins = await pinRecords.load(
		server.name,
		() => reader.pins(server.name),
		() => ttlMs,
		reader,
	);
	return pins !== null && pins.generation === server.generation ? pins : null;
}

/** What recording first-seen tools needs of the registry (tests count and gate it). */
export interface FirstSeenRecorder {
	recordFirstSeen(
		server: string,
		generation: string,
		pins: readonly PinInput[],
	): Promise<{ recorded: boolean; pins?: ServerPins | null } | { refused: string }>;
}

/** How long an isolate waits before asking the registry again for the same list of the same server. */
const FIRST_SEEN_RETRY_MS = 10 * 60_000;
/** After a failed attempt, how long before the same list is tried again. */
const FIRST_SEEN_FAILED_RETRY_MS = 60_000;
/** Writes tried by (kind, server, incarnation, list version), per isolate. */
const listAttempts = isolateCache<true>({ maxEntries: 1_000 });

/** A digest of a whole list: its tools' definitions, in name order. */
async function listVersion(tools: readonly ToolLike[]): Promise<string> {
	const definitions = tools.map(toolDefinition).sort(byName);
	return sha256Hex(stableJson(definitions));
}

/**
 * Trust on first use, after a tools/list: when the server's tools were never
 * recorded (and its mode is not "off"), asks the registry to record these as
 * approved. Bounded: at most one registry call per server, incarnation and
 * list version per isolate every FIRST_SEEN_RETRY_MS, concurrent lists share
 * it, and the registry writes only the first time any isolate asks (later
 * calls find the pins and write nothing). Once recorded, this isolate knows
 * the pins at once, for `pinsTtlMs` (the TTL given to `pinsFor`). Never
 * throws: a failure is logged, and asked again after FIRST_SEEN_RETRY_MS.
 *
 * @example
 * if (needsFirstSeen(mode, pins)) waitUntil(recordFirstSeenOnce(registryRecorder(env), member, tools, ttlMs));
 */
export async function recordFirstSeenOnce(
	registry: FirstSeenRecorder,
	server: PinnedServer,
	tools: readonly ToolLike[],
	pinsTtlMs: number,
): Promise<void> {
	if (!needsFirstSeen(server.pinning ?? "warn", null)) return;
	await oncePerList("first seen", server, tools, async (pins) => {
		const answer = await registry.recordFirstSeen(server.name, server.generation, pins);
		if ("refused" in answer) console.warn(`pinning ${server.name}: first seen not recorded: ${answer.refused}`);
		else if (answer.pins) pinRecords.set(server.name, answer.pins, pinsTtlMs);
	});
}

/** What reporting an observed list needs of the registry (tests count it). */
export interface ObservedRecorder {
	recordObserved(
		server: string,
		generation: string,
		pins: readonly PinInput[],
	): Promise<{ recorded: boolean } | { refused: string }>;
}

/**
 * A list in which some tool is not as approved (new, changed, or a pinned
 * one missing), reported to the registry as the server's last observed list:
 * what the admin reviews and approves for a server it cannot list itself.
 * Bounded as first-seen is: at most one registry call per server,
 * incarnation and list version per isolate every FIRST_SEEN_RETRY_MS, and
 * the registry writes only when the list differs from the one it keeps.
 * Never throws.
 */
export async function recordObservedOnce(
	registry: ObservedRecorder,
	server: PinnedServer,
	tools: readonly ToolLike[],
): Promise<void> {
	if ((server.pinning ?? "warn") === "off") return;
	await oncePerList("observed", server, tools, async (pins) => {
		const answer = await registry.recordObserved(server.name, server.generation, pins);
		if ("refused" in answer) console.warn(`pinning ${server.name}: observed list not kept: ${answer.refused}`);
	});
}

/**
 * Runs `write` with the list's pin inputs once per (what, server,
 * incarnation, list version) per isolate every FIRST_SEEN_RETRY_MS; a failure
 * is logged and tried again after FIRST_SEEN_FAILED_RETRY_MS. The attempt is
 * claimed before it starts, as a plain value: a concurrent list in another
 * request or object finds the claim and skips, rather than waiting on I/O
 * that is not its own.
 */
async function oncePerList(
	what: string,
	server: PinnedServer,
	tools: readonly ToolLike[],
	write: (pins: PinInput[]) => Promise<void>,
): Promise<void> {
	const attempt = `${what} ${server.name} ${server.generation} ${await listVersion(tools)}`;
	if (listAttempts.get(attempt) !== undefined) return;
	listAttempts.set(attempt, true, FIRST_SEEN_RETRY_MS);
	try {
		await write(await Promise.all(tools.map(pinInputOf)));
	} catch (error) {
		// A registry that fails is asked again a while later, not on every list meanwhile.
		listAttempts.set(attempt, true, FIRST_SEEN_FAILED_RETRY_MS);
		console.warn(`pinning ${server.name}: recording its ${what} tools failed: ${describeError(error)}`);
	}
}

/** The registry as the recorder of first-seen and observed lists. */
export function registryRecorder(env: Env): FirstSeenRecorder & ObservedRecorder {
	// The stub is made only when something is written: a list as approved asks nothing of the registry.
	return {
		recordFirstSeen: (server, generation, pins) => registryStub(env).recordFirstSeen(server, generation, pins),
		recordObserved: (server, generation, pins) => registryStub(env).recordObserved(server, generation, pins),
	};
}

/** How long one tool's state is logged once per isolate. */
const LOG_EVERY_MS = 10 * 60_000;
const logged = isolateCache<true>({ maxEntries: 5_000 });

/**
 * One structured line for a tool that is not as approved (a flagged
 * verdict), said once per isolate per server, tool and state every
 * LOG_EVERY_MS, so a list served every second does not flood the log.
 */
export function logPinVerdict(server: string, mode: PinningMode, tool: string, verdict: PinVerdict): void {
	if (!verdict.flagged) return;
	const key = stableJson([server, tool, verdict.state, verdict.changedFields ?? []]);
	if (logged.get(key)) return;
	logged.set(key, true, LOG_EVERY_MS);
	console.warn(
		JSON.stringify({
			event: "tool_pin",
			server,
			tool,
			mode,
			state: verdict.state,
			changedFields: verdict.changedFields ?? [],
			served: verdict.served,
		}),
	);
}
