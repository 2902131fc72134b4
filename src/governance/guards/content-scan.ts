import { GUARD_META_KEY, type GuardNote } from "../../mcp/guard-notes.ts";
import { MAX_JSON_DEPTH } from "../../mcp/json-depth.ts";
import { isJsonObject } from "../../primitives/json-object.ts";
import type { GuardRecord } from "../../registry/guard-records.ts";
import { GATEWAY_ATTRIBUTES, instrumentsOf } from "../../telemetry/instruments.ts";
import type { Telemetry } from "../../telemetry/telemetry.ts";
import type { DetectorKind } from "./detector-kinds.ts";
import { detect, redact } from "./detectors.ts";

/**
 * Guards run over content: each guard in turn, over every string of what its
 * stage scans, so a later guard reads what an earlier one redacted. A guard
 * that finds something is noted (kinds and counts, never the text) and
 * counted in `mcp_gateway.guard.verdicts`; a `block` stops at the first.
 */

/** What the guards made of some content: refused by one, or passed on (redacted where a guard said so). */
export type Guarded<T> = { readonly blocked: GuardNote } | { readonly value: T; readonly notes: readonly GuardNote[] };

/** Every string in a value rewritten by `map` (objects' values and arrays' items; keys stay). */
export type StringRewrite<T> = (value: T, map: (text: string) => string) => T;

export function runGuards<T>(
	guards: readonly GuardRecord[],
	content: T,
	rewrite: StringRewrite<T>,
	telemetry: Telemetry,
): Guarded<T> {
	let value = content;
	const notes: GuardNote[] = [];
	for (const guard of guards) {
		const kinds = new Set<DetectorKind>(guard.detect);
		const counts: Record<string, number> = {};
		let total = 0;
		const rewritten = rewrite(value, (text) => {
			const found = detect(text, kinds);
			if (found.length === 0) return text;
			for (const match of found) counts[match.kind] = (counts[match.kind] ?? 0) + 1;
			total += found.length;
			return guard.action === "redact" ? redact(text, found) : text;
		});
		if (total === 0) continue;
		const note: GuardNote = { guard: guard.name, action: guard.action, kinds: counts };
		instrumentsOf(telemetry).guardVerdicts.add(1, {
			[GATEWAY_ATTRIBUTES.guardName]: guard.name,
			[GATEWAY_ATTRIBUTES.guardAction]: guard.action,
		});
		if (guard.action === "block") return { blocked: note };
		if (guard.action === "redact") value = rewritten;
		notes.push(note);
	}
	return { value, notes };
}

/** Every string in a JSON value, however nested (to the depth the gateway parses at all), rewritten. */
export const rewriteJson: StringRewrite<unknown> = (value, map) => rewriteAt(value, map, 0);

function rewriteAt(value: unknown, map: (text: string) => string, depth: number): unknown {
	if (typeof value === "string") return map(value);
	// Deeper than any message the gateway takes (bodies are refused past it): left as it is.
	if (depth > MAX_JSON_DEPTH || typeof value !== "object" || value === null) return value;
	if (Array.isArray(value)) return value.map((item) => rewriteAt(item, map, depth + 1));
	return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, rewriteAt(item, map, depth + 1)]));
}

/**
 * The strings of a result a model reads: a tool result's text content and
 * embedded resources' text, its `structuredContent`, and a resource read's
 * text contents. Everything else (types, URIs, `_meta`) stays as it is.
 */
export const rewriteResult: StringRewrite<Record<string, unknown>> = (result, map) => {
	const out: Record<string, unknown> = { ...result };
	if (Array.isArray(result.content)) out.content = result.content.map((item: unknown) => rewriteItem(item, map));
	if (Array.isArray(result.contents)) out.contents = result.contents.map((item: unknown) => rewriteText(item, map));
	if ("structuredContent" in result) out.structuredContent = rewriteJson(result.structuredContent, map);
	return out;
};

/** A content item: text, or an embedded resource's text. */
function rewriteItem(item: unknown, map: (text: string) => string): unknown {
	if (!isJsonObject(item)) return item;
	if (item.type === "text") return rewriteText(item, map);
	if (item.type === "resource" && isJsonObject(item.resource))
		return { ...item, resource: rewriteText(item.resource, map) };
	return item;
}

function rewriteText(item: unknown, map: (text: string) => string): unknown {
	if (!isJsonObject(item) || typeof item.text !== "string") return item;
	return { ...item, text: map(item.text) };
}

/** A result with the guards' notes added to its `_meta` (none: the result as it was). */
export function withGuardNotes(result: Record<string, unknown>, notes: readonly GuardNote[]): Record<string, unknown> {
	if (notes.length === 0) return result;
	const meta = isJsonObject(result._meta) ? result._meta : {};
	return { ...result, _meta: { ...meta, [GUARD_META_KEY]: notes } };
}

/** The words a refusal or a withheld result gives: the guard, and what it found (kinds and counts). */
export function foundWords(note: GuardNote): string {
	const kinds = Object.entries(note.kinds).map(([kind, count]) => `${count} ${kind}`);
	return `the gateway's guard '${note.guard}' found ${kinds.join(", ")}`;
}
