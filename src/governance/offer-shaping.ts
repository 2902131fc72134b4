import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { GatewayError } from "../mcp/gateway-error.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import { unknownName, unknownResource } from "../mcp/unknown-offers.ts";
import type { PromptShaping, ResourceShaping } from "../registry/offer-shaping-schema.ts";
import { chosen } from "./globs.ts";

/** An operator's choice of a server's (or a virtual server's) prompts and resources; absent: all. */
export interface OfferShaping {
	prompts?: PromptShaping | null | undefined;
	resources?: ResourceShaping | null | undefined;
}

/** Whether there is any choice of this list kind to apply (else the list passes as it is). */
export function shapesList(shaping: OfferShaping, kind: ListKind): boolean {
	if (kind === "prompts") return Boolean(shaping.prompts);
	if (kind === "resources" || kind === "resourceTemplates") return Boolean(shaping.resources);
	return false;
}

/** What of a prompts, resources or templates list the operator offers (tools lists pass: see tool-shaping.ts). */
export function offeredItems<K extends ListKind>(
	shaping: OfferShaping,
	kind: K,
	items: Array<ListItems[K]>,
): Array<ListItems[K]> {
	if (!shapesList(shaping, kind)) return items;
	return items.filter((item) => {
		if ("uriTemplate" in item) return chosen(shaping.resources, item.uriTemplate);
		if ("uri" in item) return chosen(shaping.resources, item.uri);
		return chosen(shaping.prompts, item.name);
	});
}

/** Whether a prompt of this name is offered. */
export function promptOffered(shaping: OfferShaping, name: string): boolean {
	return chosen(shaping.prompts, name);
}

/** Whether a resource of this URI is offered (for reads and subscriptions). */
export function uriOffered(shaping: OfferShaping, uri: string): boolean {
	return chosen(shaping.resources, uri);
}

/**
 * A prompts/get or resources/read, subscribe or unsubscribe of something the
 * operator hides (or a completion of its arguments), refused as an unknown
 * prompt or resource is, before anything is sent; null for anything else.
 */
export function hiddenOfferRefusal(shaping: OfferShaping, message: JSONRPCRequest): GatewayError | null {
	const params = message.params ?? {};
	if (message.method === "prompts/get") {
		const name = String(params.name ?? "");
		return promptOffered(shaping, name) ? null : unknownName("prompt", name);
	}
	if (
		message.method === "resources/read" ||
		message.method === "resources/subscribe" ||
		message.method === "resources/unsubscribe"
	) {
		const uri = String(params.uri ?? "");
		return uriOffered(shaping, uri) ? null : unknownResource(uri);
	}
	if (message.method === "completion/complete") {
		const ref = (params.ref ?? {}) as { type?: unknown; name?: unknown; uri?: unknown };
		if (ref.type === "ref/prompt" && !promptOffered(shaping, String(ref.name ?? ""))) {
			return unknownName("prompt", String(ref.name ?? ""));
		}
		// A template's completion names it by its uriTemplate, which the same globs choose.
		if (ref.type === "ref/resource" && !uriOffered(shaping, String(ref.uri ?? ""))) {
			return unknownResource(String(ref.uri ?? ""));
		}
	}
	return null;
}
