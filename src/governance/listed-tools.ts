import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { RequestOf } from "../mcp/client-message.ts";
import type { TOOLS_LIST } from "../mcp/methods.ts";
import { observedReply, toolsResultOf } from "../mcp/tools-reply.ts";
import type { WaitUntil } from "../primitives/wait-until.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import type { ServerPins } from "../registry/tool-pins.ts";
import {
	type FirstSeenRecorder,
	logPinVerdict,
	type ObservedRecorder,
	type PinnedServer,
	pinsFor,
	recordFirstSeenOnce,
	recordObservedOnce,
} from "./pin-records.ts";
import { DEFAULT_PINNING, needsFirstSeen, type PinVerdict, pinVerdict } from "./pinning.ts";

/**
 * One check of a list an upstream just gave, wherever it was seen (a
 * session's own list, a passthrough reply, a stateless 2026-07-28 reply):
 * each tool's verdict, the first list recorded (trust on first use), and a
 * list not as approved reported as the server's last observed one.
 */

/** What checking a list needs: the pins' read path, the registry to write to, and the background. */
export interface PinContext {
	reader: RegistryReader;
	registry: FirstSeenRecorder & ObservedRecorder;
	/** How long pins are kept per isolate (the endpoint TTL). */
	ttlMs: number;
	waitUntil: WaitUntil;
}

/**
 * What a list seen is: its tools as the upstream wrote them, and whether it
 * is a whole list just seen (one page of several is not; nor is the list a
 * call is checked against, which was recorded when it was listed).
 */
export interface ListSeen {
	tools: readonly Tool[];
	complete: boolean;
}

/**
 * Each tool's verdict against the server's pins, by the upstream's name
 * (null: a name the list does not hold). The registry hears of the list in
 * the background, and only of a whole one: the first ever seen is recorded
 * as approved; a later one with a tool new, changed or missing is reported
 * as observed. A partial list is never recorded (its other pages' tools
 * would be new forever) nor reported (they would look removed).
 */
export async function checkListed(
	context: PinContext,
	server: PinnedServer,
	seen: ListSeen,
): Promise<(real: string) => PinVerdict | null> {
	const mode = server.pinning ?? DEFAULT_PINNING;
	const pins = mode === "off" ? null : await pinsFor(context.reader, server, context.ttlMs);
	const byName = new Map(seen.tools.map((tool) => [tool.name, tool]));
	// Verdicts are worked out as asked (a call asks for one), and kept for the list.
	const verdicts = new Map<string, PinVerdict>();
	const verdictOf = (real: string): PinVerdict | null => {
		const tool = byName.get(real);
		if (!tool) return null;
		let verdict = verdicts.get(real);
		if (!verdict) {
			verdict = pinVerdict(mode, pins, tool);
			verdicts.set(real, verdict);
		}
		return verdict;
	};
	if (seen.complete && seen.tools.length > 0 && needsFirstSeen(mode, pins)) {
		context.waitUntil(recordFirstSeenOnce(context.registry, server, seen.tools, context.ttlMs));
	} else if (seen.complete && mode !== "off" && pins !== null && notAsApproved(pins, byName, verdictOf)) {
		context.waitUntil(recordObservedOnce(context.registry, server, seen.tools));
	}
	return verdictOf;
}

/** Whether some listed tool is new or changed, or some pinned tool is not listed. */
function notAsApproved(
	pins: ServerPins,
	listed: ReadonlyMap<string, Tool>,
	verdictOf: (real: string) => PinVerdict | null,
): boolean {
	for (const name of listed.keys()) if (verdictOf(name)?.state !== "approved") return true;
	return pins.pins.some((pin) => !listed.has(pin.tool));
}

/**
 * A list a caller was served unchanged (nothing of it is held: its server is
 * not under "block"): checked, and each tool not as approved logged
 * (`tool_pin`), as the session's own lists are.
 */
export async function watchListed(context: PinContext, server: PinnedServer, seen: ListSeen): Promise<void> {
	const mode = server.pinning ?? DEFAULT_PINNING;
	if (mode === "off") return;
	const verdictOf = await checkListed(context, server, seen);
	for (const tool of seen.tools) {
		const verdict = verdictOf(tool.name);
		if (verdict) logPinVerdict(server.name, mode, tool.name, verdict);
	}
}

/**
 * A tools/list reply passed on unchanged (a transparent endpoint whose
 * list the session does not rewrite, or the stateless 2026-07-28 path):
 * the client gets `reply` as it came, and its copy is read in the background
 * under `maxBytes` and watched as above. Only a first page with no next one
 * is a whole list; other pages are logged, never recorded or reported.
 */
export function watchedToolsReply(
	context: PinContext,
	server: PinnedServer,
	request: RequestOf<typeof TOOLS_LIST>,
	reply: Response,
	maxBytes: number,
): Response {
	if ((server.pinning ?? DEFAULT_PINNING) === "off" || !reply.ok) return reply;
	const firstPage = request.params?.cursor === undefined;
	return observedReply(
		reply,
		async (copy, sse) => {
			const result = await toolsResultOf(copy, sse, request.id, maxBytes);
			if (result === null) return;
			await watchListed(context, server, {
				tools: result.tools,
				complete: firstPage && result.nextCursor === undefined,
			});
		},
		context.waitUntil,
	);
}
