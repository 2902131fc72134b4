import type { PinningMode, ServerPins } from "../registry/tool-pins.ts";
import { DEFINITION_FIELDS, type DefinitionField, fieldText, type ToolLike } from "./tool-digest.ts";

export { DEFAULT_PINNING, PINNING_MODES, type PinningMode, PinningModeSchema } from "../registry/tool-pins.ts";

/** Where a tool stands against its server's pins. */
export type PinState = "approved" | "new" | "changed";

/**
 * What pinning says of one listed tool. `served`: it may be listed and
 * called. `flagged`: it is not as approved and the mode wants that known
 * (logged, and marked under "warn"). `changedFields` only for "changed".
 */
export interface PinVerdict {
	state: PinState;
	changedFields?: DefinitionField[];
	served: boolean;
	flagged: boolean;
}

/** A pinned definition's canonical field texts, computed once per pins record. */
type PinIndex = ReadonlyMap<string, ReadonlyMap<DefinitionField, string | undefined>>;
const indexes = new WeakMap<ServerPins, PinIndex>();

function indexOf(pins: ServerPins): PinIndex {
	let index = indexes.get(pins);
	if (!index) {
		index = new Map(
			pins.pins.map((pin) => [
				pin.tool,
				new Map(DEFINITION_FIELDS.map((field) => [field, fieldText(pin.definition, field)] as const)),
			]),
		);
		indexes.set(pins, index);
	}
	return index;
}

/**
 * The verdict on `tool` under `mode`, against the server's `pins` (null: its
 * tools were never recorded). Pure and synchronous: definitions are compared
 * field by field in canonical JSON, which is what their digests are of, so
 * "equal text" is "equal digest" without hashing on the hot path.
 *
 * - Never recorded: trust on first use; served, not flagged, state "new"
 *   (call `needsFirstSeen`, then `RegistryDO.recordFirstSeen`).
 * - Pinned with the same definition: "approved", served.
 * - Not pinned (a tool added, or renamed to dodge its pin): "new".
 * - Pinned with another definition: "changed", with the fields that differ.
 * - "block": new and changed are not served; "warn": served and flagged;
 *   "off": everything served, nothing flagged (the state is still reported).
 *
 * @example
 * const verdict = pinVerdict(server.pinning, await pinsFor(reader, server, ttlMs), tool);
 * if (!verdict.served) refuse(heldToolSentence(tool.name, verdict));
 */
export function pinVerdict(mode: PinningMode, pins: ServerPins | null, tool: ToolLike): PinVerdict {
	if (pins === null) return { state: "new", served: true, flagged: false };
	const pinned = indexOf(pins).get(tool.name);
	const changed = pinned ? DEFINITION_FIELDS.filter((field) => pinned.get(field) !== fieldText(tool, field)) : [];
	if (pinned && changed.length === 0) return { state: "approved", served: true, flagged: false };
	const state: PinState = pinned ? "changed" : "new";
	const verdict: PinVerdict = { state, served: mode !== "block", flagged: mode !== "off" };
	if (state === "changed") verdict.changedFields = changed;
	return verdict;
}

/** Whether a list just seen should be recorded as the server's first (trust on first use). */
export function needsFirstSeen(mode: PinningMode, pins: ServerPins | null): boolean {
	return mode !== "off" && pins === null;
}

/** The sentence a refused call to a held tool carries (and what a log line says of it). */
export function heldToolSentence(tool: string, verdict: Pick<PinVerdict, "state" | "changedFields">): string {
	if (verdict.state === "changed") {
		const fields = verdict.changedFields?.join(", ") ?? "its definition";
		return `Tool '${tool}' changed since it was approved (${fields}); ask the operator to review and approve it.`;
	}
	return `Tool '${tool}' is new since this server's tools were approved; ask the operator to review and approve it.`;
}
