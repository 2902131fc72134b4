import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { RouteTarget } from "../../mcp/aggregate.ts";
import { isAppOnly } from "../../mcp/app-visibility.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { hasView } from "../../mcp/ui-uris.ts";

/*
 * A View (an MCP Apps UI, `io.modelcontextprotocol/ui`) calls its server's
 * tools by the names its server gave them, and the host forwards the call
 * unchanged, with nothing that says which View sent it (decision 0107). On an
 * aggregate those names are not the listed `{server}__{name}`, and the gateway
 * cannot tell one View from another, nor a View from the model. So:
 *
 * - a name that is not listed resolves to a member's tool of exactly that
 *   name when one member alone offers it (to this caller); offered by several,
 *   it is refused, naming them;
 * - an app-only tool (`_meta.ui.visibility` without "model") resolves so only
 *   while its member is the one member of the endpoint whose tools have Views:
 *   any View this endpoint serves is then that member's;
 * - an app-only tool is never run by its listed name: only a View calls it,
 *   and a View calls by its server's name.
 */

/** What the aggregate lists of one exposed tool: where it routes and the tool as listed. */
export interface ListedTool {
	target: RouteTarget;
	tool: Tool;
}

/**
 * The member tool a View's call of `name` (a name the endpoint does not list)
 * stands for; null when no member offers it. Throws when the rule above
 * refuses it.
 */
export function viewCallTarget(name: string, listed: ReadonlyMap<string, ListedTool>): RouteTarget | null {
	const candidates = [...listed.values()].filter((entry) => entry.target.name === name);
	const [only, ...others] = candidates;
	if (only === undefined) return null;
	if (others.length > 0) {
		const servers = candidates.map((entry) => entry.target.server).join(", ");
		throw new GatewayError(
			"invalid_params",
			`Tool '${name}' is offered by several servers of this endpoint (${servers}); the gateway does not guess which one a View means. Call it as <server>__${name}, or use the server's own endpoint.`,
		);
	}
	if (isAppOnly(only.tool)) {
		const withViews = new Set(
			[...listed.values()].filter((entry) => hasView(entry.tool)).map((entry) => entry.target.server),
		);
		withViews.delete(only.target.server);
		if (withViews.size > 0) {
			throw new GatewayError(
				"invalid_params",
				`Tool '${name}' of ${only.target.server} is for its own server's Views only, and this endpoint also serves Views of ${[...withViews].join(", ")}: the gateway cannot tell which View is calling, so it does not run it. Use the server's own endpoint, /mcp/${only.target.server}.`,
			);
		}
	}
	return only.target;
}

/** The refusal of an app-only tool called by its listed name (see the rule above); null for any other tool. */
export function listedAppOnlyRefusal(exposed: string, entry: ListedTool): GatewayError | null {
	if (!isAppOnly(entry.tool)) return null;
	return new GatewayError(
		"invalid_params",
		`Tool '${exposed}' is for its server's Views only (_meta.ui.visibility leaves out "model"): a View calls it by its own name, '${entry.target.name}', not by the name this endpoint lists.`,
	);
}
