import type { Context } from "hono";
import { z } from "zod";
import { cookie, cookieValue, signedInPerson } from "../../auth/browser-sign-in.ts";
import { settingsFrom } from "../../config.ts";
import type { Env } from "../../env.ts";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { secretsEqual, sha256Hex } from "../../primitives/crypto.ts";
import { openJson, signJson } from "../../primitives/signed-json.ts";
import { type Identity, ruleFor } from "../../registry/access-rules.ts";
import type { EdgeContext } from "../request-context.ts";

/**
 * Who runs the dashboard: the holder of the admin token, signed in through
 * its form, or a person signed in with the gateway's own browser sign-in
 * whose deciding access rule grants `admin`. The token's holder gets a
 * signed session cookie (never the token): HttpOnly, SameSite=Strict, Secure
 * on https, scoped to /admin, carrying a digest of the token it was opened
 * with, so rotating ADMIN_TOKEN ends every such session.
 */
export type Operator = { kind: "token" } | { kind: "person"; identity: Identity; rule: string };

/** Why there is no operator: nobody signed in, or a person whose rule does not grant admin. */
export type NoOperator = { refused: "signed-out" } | { refused: "not-admin"; identity: Identity };

export const ADMIN_SESSION_COOKIE = "gw_admin";
const ADMIN_SESSION_LABEL = "mcp-edge-gateway admin session";
const ADMIN_SESSION_TTL_MS = 8 * 60 * 60_000;
/** The dashboard's cookies go nowhere else: not to /mcp, not to the people's pages. */
export const DASHBOARD_COOKIE_PATH = "/admin";

const AdminSessionSchema = z.object({ token: z.string(), expiresAt: z.number() });

type DashboardContext = Context<EdgeContext>;

/** A short digest of the admin token: a session names the token it was opened with, not the token. */
async function tokenTag(adminToken: string): Promise<string> {
	return (await sha256Hex(`mcp-edge-gateway admin session\n${adminToken}`)).slice(0, 32);
}

function secretsOf(env: Env): { adminToken: string; sessionSecret: string } {
	const { adminToken, sessionSecret } = settingsFrom(env);
	if (!adminToken) {
		throw new GatewayError("misconfigured", "The dashboard is disabled: the ADMIN_TOKEN secret is not set.", {
			status: 503,
		});
	}
	if (!sessionSecret)
		throw new GatewayError("misconfigured", "The gateway is misconfigured: SESSION_SECRET is not set.");
	return { adminToken, sessionSecret };
}

/** Whether `token` is the admin token (compared in constant time). */
export async function isAdminToken(env: Env, token: string): Promise<boolean> {
	return secretsEqual(token, secretsOf(env).adminToken);
}

/** The Set-Cookie value of a new admin session for `origin`. */
export async function adminSessionCookie(env: Env, origin: string): Promise<string> {
	const { adminToken, sessionSecret } = secretsOf(env);
	const session = { token: await tokenTag(adminToken), expiresAt: Date.now() + ADMIN_SESSION_TTL_MS };
	const value = await signJson(sessionSecret, ADMIN_SESSION_LABEL, session);
	return cookie(ADMIN_SESSION_COOKIE, value, origin, ADMIN_SESSION_TTL_MS, {
		sameSite: "Strict",
		path: DASHBOARD_COOKIE_PATH,
	});
}

/** The Set-Cookie value that ends the admin session. */
export function endedAdminSessionCookie(origin: string): string {
	return cookie(ADMIN_SESSION_COOKIE, "", origin, 0, { sameSite: "Strict", path: DASHBOARD_COOKIE_PATH });
}

/** The operator of this request, or why there is none. */
export async function operatorOf(c: DashboardContext): Promise<Operator | NoOperator> {
	const env = c.env;
	const { adminToken, sessionSecret } = secretsOf(env);
	const session = await openJson(
		sessionSecret,
		ADMIN_SESSION_LABEL,
		cookieValue(c.req.raw, ADMIN_SESSION_COOKIE),
		AdminSessionSchema,
	);
	if (session && session.expiresAt > Date.now() && session.token === (await tokenTag(adminToken))) {
		return { kind: "token" };
	}
	const settings = settingsFrom(env);
	if (settings.oauth.mode !== "gateway") return { refused: "signed-out" };
	const identity = await signedInPerson(c.req.raw, env);
	if (!identity) return { refused: "signed-out" };
	const rules = await c.get("reader").rules();
	const rule = ruleFor(rules, identity, settings.oauth.oidc.issuer);
	return rule?.admin ? { kind: "person", identity, rule: rule.name } : { refused: "not-admin", identity };
}

/**
 * Whether a form post comes from the dashboard's own pages: its Origin is
 * this gateway's. Browsers send Origin on every POST; a post without one,
 * or from another site, changes nothing (with SameSite cookies, the second lock).
 */
export function fromOwnPages(c: DashboardContext): boolean {
	return c.req.header("origin") === new URL(c.req.url).origin;
}

/** Who acted, for the dashboard's action lines: the token, or the person and the rule that let them in. */
export function operatorActor(operator: Operator): string {
	return operator.kind === "token" ? "admin token" : `person ${operatorLabel(operator)} (rule ${operator.rule})`;
}

/** How the page names who is signed in. */
export function operatorLabel(operator: Operator): string {
	return operator.kind === "token" ? "the admin token" : (operator.identity.email ?? operator.identity.subject);
}
