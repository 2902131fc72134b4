/**
 * Reading what a client answered to a server's input requests, in either era:
 * on 2026-07-28 the answers arrive as `inputResponses` on the retried request;
 * on a 2025 session the SDK's legacy shim sends the same requests to the
 * client as server→client requests and re-enters the handler with the answers
 * in the same place. The handlers are written once, against this view.
 */
import {
	CLIENT_CAPABILITIES_META_KEY,
	type CreateMessageResult,
	type CreateMessageResultWithTools,
	inputResponse,
	type RequestStateCodec,
	type ServerContext,
} from "@modelcontextprotocol/server";
import * as z from "zod";

/**
 * What the reference server keeps in `requestState` between rounds: which
 * flow minted it, how far it got, and what earlier rounds answered. Sealed
 * with an HMAC (createRequestStateCodec), because it comes back from the
 * client and must not be trusted unsealed.
 */
export interface FlowState {
	flow: string;
	round: number;
	name?: string;
	/** Makes every minted state distinct, so a replayed one is recognisably a replay. */
	nonce: string;
}

export type FlowStateCodec = RequestStateCodec<FlowState>;

/** The verified state of this round when it belongs to `flow`, else undefined (a first round, or another flow's state). */
export function flowState(ctx: ServerContext, flow: string): FlowState | undefined {
	const state = ctx.mcpReq.requestState<FlowState>();
	return state?.flow === flow ? state : undefined;
}

/** The text of a sampling answer for `key`, if the client sent one. */
export function sampledText(ctx: ServerContext, key: string): string | undefined {
	const view = inputResponse(ctx.mcpReq.inputResponses, key);
	return view.kind === "sampling" ? textOf(view.result) : undefined;
}

/** The URIs of a roots/list answer for `key`, if the client sent one. */
export function rootUris(ctx: ServerContext, key: string): string[] | undefined {
	const view = inputResponse(ctx.mcpReq.inputResponses, key);
	return view.kind === "roots" ? view.roots.map((root) => root.uri) : undefined;
}

/** An elicitation answer for `key` whatever its action, if the client sent one. */
export function elicitation(
	ctx: ServerContext,
	key: string,
): { action: string; content: Record<string, unknown> } | undefined {
	const view = inputResponse(ctx.mcpReq.inputResponses, key);
	return view.kind === "elicit" ? { action: view.action, content: view.content ?? {} } : undefined;
}

function textOf(result: CreateMessageResult | CreateMessageResultWithTools): string {
	const blocks = Array.isArray(result.content) ? result.content : [result.content];
	const texts = blocks.flatMap((block) => (block.type === "text" ? [block.text] : []));
	return texts.length > 0 ? texts.join("\n") : JSON.stringify(result.content);
}

/**
 * The client capabilities a 2026-07-28 request declared in its envelope. The
 * SDK's published type of `ctx.mcpReq.envelope` is empty (`{}` in 2.4.0's
 * declarations), so the envelope is parsed here rather than trusted; sampling
 * and roots are deprecated names at 2026-07-28 but still what the envelope
 * carries.
 */
const EnvelopeCapabilities = z.object({
	[CLIENT_CAPABILITIES_META_KEY]: z
		.looseObject({ elicitation: z.unknown(), sampling: z.unknown(), roots: z.unknown() })
		.partial()
		.optional(),
});

export function declaredCapabilities(ctx: ServerContext): { elicitation: boolean; sampling: boolean; roots: boolean } {
	const parsed = EnvelopeCapabilities.safeParse(ctx.mcpReq.envelope ?? {});
	const declared = parsed.success ? parsed.data[CLIENT_CAPABILITIES_META_KEY] : undefined;
	return {
		elicitation: declared?.elicitation !== undefined,
		sampling: declared?.sampling !== undefined,
		roots: declared?.roots !== undefined,
	};
}
