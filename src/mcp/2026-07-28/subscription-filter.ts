import type { SubscriptionFilterSchema } from "@modelcontextprotocol/core";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import { isJsonObject } from "../../primitives/json-object.ts";
import {
	NOTIFICATIONS_PROMPTS_LIST_CHANGED,
	NOTIFICATIONS_RESOURCES_LIST_CHANGED,
	NOTIFICATIONS_RESOURCES_UPDATED,
	NOTIFICATIONS_TOOLS_LIST_CHANGED,
} from "../methods.ts";

/** What a `subscriptions/listen` asks for (2026-07-28). */
export type SubscriptionFilter = z.infer<typeof SubscriptionFilterSchema>;

/**
 * The part of `wanted` a server with these capabilities can honour: list
 * changes it announces, and resource updates when it supports subscriptions.
 */
export function acknowledgedFilter(
	wanted: SubscriptionFilter,
	capabilities: Record<string, unknown>,
): SubscriptionFilter {
	const declares = (kind: string, feature: string) => {
		const declared = capabilities[kind];
		return isJsonObject(declared) && declared[feature] === true;
	};
	const acknowledged: SubscriptionFilter = {};
	if (wanted.toolsListChanged && declares("tools", "listChanged")) acknowledged.toolsListChanged = true;
	if (wanted.promptsListChanged && declares("prompts", "listChanged")) acknowledged.promptsListChanged = true;
	if (wanted.resourcesListChanged && declares("resources", "listChanged")) acknowledged.resourcesListChanged = true;
	if (wanted.resourceSubscriptions?.length && declares("resources", "subscribe")) {
		acknowledged.resourceSubscriptions = wanted.resourceSubscriptions;
	}
	return acknowledged;
}

/** Whether a notification is one the filter opted in to; nothing else goes on a listen stream. */
export function wantedBy(filter: SubscriptionFilter, message: JSONRPCMessage): boolean {
	if (!("method" in message) || "id" in message) return false;
	switch (message.method) {
		case NOTIFICATIONS_TOOLS_LIST_CHANGED:
			return filter.toolsListChanged === true;
		case NOTIFICATIONS_PROMPTS_LIST_CHANGED:
			return filter.promptsListChanged === true;
		case NOTIFICATIONS_RESOURCES_LIST_CHANGED:
			return filter.resourcesListChanged === true;
		case NOTIFICATIONS_RESOURCES_UPDATED: {
			const uri = message.params?.uri;
			return typeof uri === "string" && (filter.resourceSubscriptions ?? []).includes(uri);
		}
		default:
			return false;
	}
}
