import { GUARD_META_KEY, type GuardNote } from "../../mcp/guard-notes.ts";
import { MAX_JSON_DEPTH } from "../../mcp/json-depth.ts";
import { isJsonObject } from "../../primitives/json-object.ts";
import type { GuardRecord } from "../../registry/guard-records.ts";
import { GATEWAY_ATTRIBUTES, instrumentsOf } from "../../telemetry/instruments.ts";
import type { Telemetry } from "../../telemetry/telemetry.ts";
import type { DetectorKind } from "./detector-kinds.ts";
import { detect, redact } from "./detectors.ts";
import { askScanner, isWebhookGuard, type WebhookGuard, type WebhookScan } from "./webhook-guard.ts";

/**
 * Guards run over content: each guard in turn, so a later guard reads what an
 * earlier one redacted or its scanner modified. A detect guard reads every
 * string of what its stage scans and is noted when it finds something (kinds
 * and counts, never the text); a webhook guard asks its scanner
 * (webhook-guard.ts) and is noted with its verdict. Each note is counted in
 * `mcp_gateway.guard.verdicts`; the first block stops the run.
 */

/** Content refused by a guard: its note, and the sentence the caller reads. */
export interface Blocked {
	readonly blocked: GuardNote;
	/** The refusal, given what was refused ("this call's arguments") and what came of it ("it was not sent"). */
	sentence(what: string, outcome: string): string;
}

/** What the guards made of some content: refused by one, or passed on (redacted or modified where a guard said so). */
export type Guarded<T> = Blocked | { readonly value: T; readonly notes: readonly GuardNote[] };

/** Every string in a value rewritten by `map` (objects' values and arrays' items; keys stay). */
export type StringRewrite<T> = (value: T, map: (text: string) => string) => T;

/** A stage's content as guards read it: its strings, for detectors; its shape, for a scanner's modification. */
export interface StageContent<T> {
	rewrite: StringRewrite<T>;
	/** A scanner's modified content as `T`, or null when it is not of the stage's shape. */
	accept(modified: unknown): T | null;
}

/** What a run of guards needs besides the content: where verdicts are counted, and how a scanner is asked. */
export interface GuardRun {
	telemetry: Telemetry;
	webhook: WebhookScan;
}

export async function runGuards<T>(
	guards: readonly GuardRecord[],
	content: T,
	stage: StageContent<T>,
	run: GuardRun,
): Promise<Guarded<T>> {
	let value = content;
	const notes: GuardNote[] = [];
	for (const guard of guards) {
		const outcome = isWebhookGuard(guard)
			? await scannerVerdict(guard, value, stage, run)
			: detectorVerdict(guard, value, stage.rewrite);
		if (outcome === null) continue;
		instrumentsOf(run.telemetry).guardVerdicts.add(1, {
			[GATEWAY_ATTRIBUTES.guardName]: guard.name,
			[GATEWAY_ATTRIBUTES.guardAction]: ("blocked" in outcome ? outcome.blocked : outcome.note).action,
		});
		if ("blocked" in outcome) return outcome;
		value = outcome.value;
		notes.push(outcome.note);
	}
	return { value, notes };
}

/** What one guard made of the content: refused, or passed on with its note; null when a detector found nothing. */
type GuardOutcome<T> = Blocked | { value: T; note: GuardNote } | null;

function detectorVerdict<T>(guard: GuardRecord, value: T, rewrite: StringRewrite<T>): GuardOutcome<T> {
	const kinds = new Set<DetectorKind>(guard.detect);
	const action = guard.action ?? "log";
	const counts: Record<string, number> = {};
	let total = 0;
	const rewritten = rewrite(value, (text) => {
		const found = detect(text, kinds);
		if (found.length === 0) return text;
		for (const match of found) counts[match.kind] = (counts[match.kind] ?? 0) + 1;
		total += found.length;
		return action === "redact" ? redact(text, found) : text;
	});
	if (total === 0) return null;
	const note: GuardNote = { guard: guard.name, action, kinds: counts };
	if (action === "block") {
		return { blocked: note, sentence: (what, outcome) => `${capitalized(foundWords(note))} in ${what}, so ${outcome}` };
	}
	return { value: action === "redact" ? rewritten : value, note };
}

async function scannerVerdict<T>(
	guard: WebhookGuard,
	value: T,
	stage: StageContent<T>,
	run: GuardRun,
): Promise<GuardOutcome<T>> {
	const verdict = await askScanner(guard, value, run.webhook, (modified) => stage.accept(modified));
	const named = `The gateway's guard '${guard.name}'`;
	const noted = (action: GuardNote["action"]): GuardNote => ({ guard: guard.name, action, kinds: {} });
	switch (verdict.decision) {
		case "allow":
			return { value, note: noted("allow") };
		case "modify":
			return { value: verdict.content, note: noted("modify") };
		case "block": {
			const said = verdict.reason ? ` (its scanner said: ${verdict.reason})` : "";
			return {
				blocked: noted("block"),
				sentence: (what, outcome) => `${named} blocked ${what}${said}, so ${outcome}`,
			};
		}
		case "failed": {
			// The operator's log says why (a variable that is not set, a status, a timeout); the caller is told only that it did not answer.
			console.warn(
				`guard ${guard.name}: its webhook failed, so onFailure ${guard.webhook.onFailure} applies (${verdict.why})`,
			);
			if (guard.webhook.onFailure === "allow") return { value, note: noted("failed") };
			return {
				blocked: noted("failed"),
				sentence: (what, outcome) => `${named} could not check ${what}: its scanner did not answer, so ${outcome}`,
			};
		}
	}
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

/** `words` with its first letter a capital, to begin a sentence. */
export function capitalized(words: string): string {
	return words.charAt(0).toUpperCase() + words.slice(1);
}
