import type { ServerPins } from "../registry/tool-pins.ts";
import { pinVerdict } from "./pinning.ts";
import { type DefinitionField, type ToolLike, toolDigest } from "./tool-digest.ts";

/**
 * What the operator is shown of a server's tools against its pins
 * (`GET /admin/servers/:name/tools`), and what an approval stores.
 */

/**
 * "removed": pinned, no longer listed. "pinned": pinned, and the current list
 * could not be fetched (a server that needs a caller, or one that did not answer).
 */
export type ToolReportState = "approved" | "changed" | "new" | "removed" | "pinned";

export interface ToolReport {
	name: string;
	state: ToolReportState;
	changedFields?: DefinitionField[];
	/** The digest of the definition listed now. */
	digest?: string;
	/** The digest approved, and when. */
	approvedDigest?: string;
	approvedAt?: string;
}

/**
 * Each tool's state: those listed now (`current`, in the server's order),
 * then pinned ones it no longer lists. `current` null: only the pins, as
 * "pinned". A server never recorded has every listed tool "new".
 */
export async function pinReport(pins: ServerPins | null, current: readonly ToolLike[] | null): Promise<ToolReport[]> {
	const byName = new Map((pins?.pins ?? []).map((pin) => [pin.tool, pin]));
	const approved = (name: string) => {
		const pin = byName.get(name);
		return pin ? { approvedDigest: pin.digest, approvedAt: new Date(pin.approvedAt).toISOString() } : {};
	};
	if (current === null) {
		return [...byName.keys()].map((name) => ({ name, state: "pinned", ...approved(name) }));
	}
	const listed = new Set(current.map((tool) => tool.name));
	const reports = await Promise.all(
		current.map(async (tool): Promise<ToolReport> => {
			const verdict = pinVerdict("warn", pins, tool);
			const report: ToolReport = { name: tool.name, state: verdict.state, digest: await toolDigest(tool) };
			if (verdict.changedFields) report.changedFields = verdict.changedFields;
			return { ...report, ...approved(tool.name) };
		}),
	);
	const removed = [...byName.keys()].filter((name) => !listed.has(name));
	return [...reports, ...removed.map((name): ToolReport => ({ name, state: "removed", ...approved(name) }))];
}

/** What an approval stores and drops; or the names it cannot approve (neither listed nor pinned). */
export type ApprovalPlan = { approve: ToolLike[]; forget: string[] } | { unknown: string[] };

/**
 * All (`names` absent): every listed tool as it is now, and the pins of
 * tools no longer listed dropped. Named: each listed one as it is now, each
 * one only pinned (removed) dropped; a name that is neither is refused.
 */
export function planApproval(
	pins: ServerPins | null,
	current: readonly ToolLike[],
	names: readonly string[] | undefined,
): ApprovalPlan {
	const pinned = new Set((pins?.pins ?? []).map((pin) => pin.tool));
	const listed = new Map(current.map((tool) => [tool.name, tool]));
	if (names === undefined) {
		return { approve: [...listed.values()], forget: [...pinned].filter((name) => !listed.has(name)) };
	}
	const wanted = [...new Set(names)];
	const unknown = wanted.filter((name) => !listed.has(name) && !pinned.has(name));
	if (unknown.length > 0) return { unknown };
	return {
		approve: wanted.flatMap((name) => listed.get(name) ?? []),
		forget: wanted.filter((name) => !listed.has(name)),
	};
}
