import type { MiddlewareHandler } from "hono";
import { settingsFrom } from "../../config.ts";
import { acceptsHtml } from "../../primitives/media-type.ts";
import { ADMIN_PREFIX } from "../admin-routes.ts";
import type { EdgeContext } from "../request-context.ts";
import { readAdminAnswer } from "./admin-calls.ts";
import { DASHBOARD_UI, notAdminResponse } from "./layout.tsx";
import { operatorActor, operatorOf } from "./operator.ts";

/** The admin API's description, which the home page and the dashboard link: its page and its document. */
export const REFERENCE_PATHS: readonly string[] = [`${ADMIN_PREFIX}/docs`, `${ADMIN_PREFIX}/openapi.json`];

/**
 * The admin API's reference for whoever runs the dashboard (decision 0064).
 * A request with no `Authorization` for `/admin/docs` or
 * `/admin/openapi.json`, read with GET or HEAD, is answered for an operator
 * signed in to the dashboard (its cookie, or a person whose rule grants admin)
 * with the admin API's own answer, fetched in-process with the token. A
 * browser with no sign-in goes to the dashboard's sign-in, which brings it
 * back here; anything else (an API client, a wrong token) passes on to the
 * admin API and its 401, as before. Nothing else of `/admin` opens to the
 * cookie, and nothing here writes.
 */
export const referenceForOperators: MiddlewareHandler<EdgeContext> = async (c, next) => {
	const { adminToken, sessionSecret } = settingsFrom(c.env);
	const path = new URL(c.req.url).pathname;
	const read = c.req.method === "GET" || c.req.method === "HEAD";
	if (!read || !REFERENCE_PATHS.includes(path) || c.req.header("authorization") !== undefined) return next();
	// Without these the dashboard has no sign-in: the admin API says why it refuses.
	if (!adminToken || !sessionSecret) return next();
	const operator = await operatorOf(c);
	if (!("refused" in operator)) {
		// A read of the description leaves nothing to finish after the answer: no execution context is needed.
		const caller = { actor: operatorActor(operator), env: c.env, ctx: undefined };
		return readAdminAnswer(caller, path.slice(ADMIN_PREFIX.length));
	}
	if (!acceptsHtml(c.req.header("accept"))) return next();
	if (operator.refused === "not-admin") return notAdminResponse(operator.identity);
	return c.redirect(`${DASHBOARD_UI}/sign-in?return=${encodeURIComponent(path)}`, 303);
};
