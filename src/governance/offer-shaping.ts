import type { SessionRequest } from "../mcp/client-message.ts";
import type { GatewayError } from "../mcp/gateway-error.ts";
import type { ListItems, ListKind } from "../mcp/list-kinds.ts";
import {
	COMPLETION_COMPLETE,
	PROMPTS_GET,
	RESOURCES_READ,
	RESOURCES_SUBSCRIBE,
	RESOURCES_UNSUBSCRIBE,
} from "../mcp/methods.ts";
import { unknownName, unknownResource } from "../mcp/unknown-offers.ts";
import { type UriForm, unnormalizableUri } from "../mcp/uri-normalize.ts";
import type { PromptShaping, ResourceShaping } from "../registry/offer-shaping-schema.ts";
import { chosen } from "./globs.ts";
import { chooseResource } from "./resource-globs.ts";

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
	const { resources } = shaping;
	return items.filter((item) => {
		// An entry the gateway cannot normalise is left out: a read of it would be refused.
		if ("uriTemplate" in item)
			return !resources || chooseResource(resources, item.uriTemplate, "template") === "chosen";
		if ("uri" in item) return !resources || chooseResource(resources, item.uri, "uri") === "chosen";
		return chosen(shaping.prompts, item.name);
	});
}

/** Whether a prompt of this name is offered. */
export function promptOffered(shaping: OfferShaping, name: string): boolean {
	return chosen(shaping.prompts, name);
}

/**
 * The refusal of a request for the resource at `uri` (a template's text for
 * a completion: `form` "template"): none where the operator chose no
 * resources (nothing is normalised, the URI passes as it is); -32602 when the
 * URI cannot be normalised; the unknown resource's when the globs hide its
 * normal form; else none, and the client's URI is what is sent.
 */
export function resourceRefusal(shaping: OfferShaping, uri: string, form: UriForm = "uri"): GatewayError | null {
	if (!shaping.resources) return null;
	const choice = chooseResource(shaping.resources, uri, form);
	if (choice === "chosen") return null;
	return choice === "hidden" ? unknownResource(uri) : unnormalizableUri(uri, choice.refused);
}

/**
 * A prompts/get or resources/read, subscribe or unsubscribe of something the
 * operator hides (or a completion of its arguments), refused as an unknown
 * prompt or resource is, before anything is sent; null for anything else.
 * URIs are judged in normal form, however the client spelled them (see
 * `resourceRefusal`).
 */
export function hiddenOfferRefusal(shaping: OfferShaping, request: SessionRequest): GatewayError | null {
	switch (request.method) {
		case PROMPTS_GET: {
			const { name } = request.message.params;
			return promptOffered(shaping, name) ? null : unknownName("prompt", name);
		}
		case RESOURCES_READ:
		case RESOURCES_SUBSCRIBE:
		case RESOURCES_UNSUBSCRIBE:
			return resourceRefusal(shaping, request.message.params.uri);
		case COMPLETION_COMPLETE: {
			const { ref } = request.message.params;
			if (ref.type === "ref/prompt") return promptOffered(shaping, ref.name) ? null : unknownName("prompt", ref.name);
			// A template's completion names it by its uriTemplate, which the same globs choose.
			return resourceRefusal(shaping, ref.uri, "template");
		}
		default:
			return null;
	}
}
