import { z } from "zod";
import { describeError } from "../../mcp/gateway-error.ts";
import { readCapped } from "../../mcp/read-capped.ts";
import type { GuardRecord, GuardWebhook } from "../../registry/guard-records.ts";

/**
 * A webhook guard: the stage's content sent to an organisation's own scanner
 * (one signed POST, shaped after SEP-1763's interceptor request; docs/guards.md),
 * and its answer read as a verdict: allow, block (with a reason the caller
 * reads), or modify (the content to go on instead). Anything else — a status
 * other than 2xx, a redirect, no answer in time, an answer too large or not
 * one of the three, modified content of the wrong shape, a secret that does
 * not resolve — is a failure, which the guard's `onFailure` decides.
 */

/** What the scanner is told of the call its content belongs to. */
export interface GuardSubject {
	server: string;
	/** The tool as the caller's endpoint names it; null for a resource read. */
	tool: string | null;
	method: string;
	caller: { kind: "key" | "person"; id: string };
}

/**
 * One signed POST of `body` to a guard's webhook, its secret resolved at use
 * (it rejects, naming the variable, when the secret does not resolve). The
 * session and the edge give it: governance reaches no network itself.
 */
export type GuardWebhookPost = (webhook: GuardWebhook, body: string) => Promise<Response>;

/** What running webhook guards over a call's content needs. */
export interface WebhookScan {
	post: GuardWebhookPost;
	subject: GuardSubject;
}

/** A webhook guard: a guard record whose scanner is its own. */
export type WebhookGuard = GuardRecord & { webhook: GuardWebhook };

/** The largest answer read from a scanner; a larger one is a failure. */
export const MAX_SCANNER_ANSWER_BYTES = 1024 * 1024;

/** The most of a block's reason the caller reads (the rest is cut, marked with an ellipsis). */
export const MAX_BLOCK_REASON_CHARS = 200;

const ScannerAnswerSchema = z.discriminatedUnion("decision", [
	z.object({ decision: z.literal("allow") }),
	z.object({
		decision: z.literal("block"),
		reason: z
			.string()
			.optional()
			.transform((reason) => (reason === undefined ? undefined : boundedReason(reason))),
	}),
	z.object({ decision: z.literal("modify"), content: z.unknown() }),
]);

/** What a scanner's answer came to: its decision, or why it is a failure (for the operator's log). */
export type ScannerVerdict<T> =
	| { decision: "allow" }
	| { decision: "block"; reason: string | undefined }
	| { decision: "modify"; content: T }
	| { decision: "failed"; why: string };

export function isWebhookGuard(guard: GuardRecord): guard is WebhookGuard {
	return guard.webhook !== null;
}

/**
 * The scanner's verdict on `content` at the guard's stage; `accept` checks a
 * modified content (a JSON object of arguments, a result of the method's
 * shape) and gives it, or null when it is not one.
 */
export async function askScanner<T>(
	guard: WebhookGuard,
	content: T,
	scan: WebhookScan,
	accept: (modified: unknown) => T | null,
): Promise<ScannerVerdict<T>> {
	const { subject } = scan;
	const body = JSON.stringify({
		guard: guard.name,
		stage: guard.stage,
		server: subject.server,
		tool: subject.tool,
		method: subject.method,
		caller: subject.caller,
		content,
	});
	let reply: Response;
	try {
		reply = await scan.post(guard.webhook, body);
	} catch (error) {
		const why =
			error instanceof Error && error.name === "TimeoutError"
				? `no answer within ${guard.webhook.timeoutMs} ms`
				: describeError(error);
		return { decision: "failed", why };
	}
	if (reply.status < 200 || reply.status > 299) {
		await reply.body?.cancel();
		return { decision: "failed", why: `it answered HTTP ${reply.status}` };
	}
	const answer = await readAnswer(reply, guard.webhook.timeoutMs);
	if ("why" in answer) return { decision: "failed", why: answer.why };
	const parsed = ScannerAnswerSchema.safeParse(answer.json);
	if (!parsed.success) {
		return { decision: "failed", why: 'its answer is not { "decision": "allow" | "block" | "modify" }' };
	}
	const verdict = parsed.data;
	if (verdict.decision !== "modify") return verdict;
	const modified = accept(verdict.content);
	if (modified === null) return { decision: "failed", why: `its modified content is not ${shapeWords(guard)}` };
	return { decision: "modify", content: modified };
}

/** The answer's JSON, read up to its bound; a body that passes it, or is not JSON, is why the webhook failed. */
async function readAnswer(reply: Response, timeoutMs: number): Promise<{ json: unknown } | { why: string }> {
	if (!reply.body) return { why: "its answer is empty" };
	let bytes: Uint8Array | null;
	try {
		bytes = await readCapped(reply.body, MAX_SCANNER_ANSWER_BYTES);
	} catch (error) {
		// The POST's timeout also ends a body that stops half way.
		const timedOut = error instanceof Error && error.name === "TimeoutError";
		return { why: timedOut ? `no whole answer within ${timeoutMs} ms` : describeError(error) };
	}
	if (bytes === null) return { why: `its answer is over ${MAX_SCANNER_ANSWER_BYTES} bytes` };
	try {
		return { json: JSON.parse(new TextDecoder().decode(bytes)) };
	} catch (error) {
		return { why: `its answer is not JSON (${describeError(error)})` };
	}
}

function shapeWords(guard: WebhookGuard): string {
	return guard.stage === "request" ? "a JSON object of arguments" : "a result of the method's shape";
}

function boundedReason(reason: string): string {
	// Control characters would let a scanner break the caller's refusal into lines of its own.
	const flat = reason.replace(/\p{Cc}+/gu, " ").trim();
	return flat.length > MAX_BLOCK_REASON_CHARS ? `${flat.slice(0, MAX_BLOCK_REASON_CHARS)}…` : flat;
}
