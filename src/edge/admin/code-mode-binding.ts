import type { Env } from "../../env.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import type { DisclosureMode } from "../../registry/disclosure-schema.ts";

/**
 * Refuses `disclosure: "code"` when the Worker has no Worker Loader binding
 * to run programs in: an endpoint whose every `execute_code` would fail is
 * refused when it is written, with what to do about it (docs/code-mode.md).
 */
export function refuseCodeWithoutLoader(env: Env, body: { disclosure: DisclosureMode }): void {
	if (body.disclosure !== "code" || env.LOADER !== undefined) return;
	throw new GatewayError(
		"bad_request",
		'Bad Request: disclosure "code" runs programs through a Worker Loader binding, and this Worker has none: add `[[worker_loaders]] binding = "LOADER"` to wrangler.toml and deploy again (docs/code-mode.md), or use "search".',
	);
}
