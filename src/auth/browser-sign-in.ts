import { Hono } from "hono";
import { z } from "zod";
import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { randomToken } from "../primitives/crypto.ts";
import { openJson, signJson } from "../primitives/signed-json.ts";
import { type Identity, IdentitySchema } from "../registry/access-rules.ts";
import { identityFromCallback, newSignInData, providerSignInUrl, SignInRefused } from "./oidc-client.ts";
import { errorPage } from "./pages.ts";
import { SIGN_IN_CALLBACK_PATH } from "./provider-callbacks.ts";
import { safeReturnPath } from "./return-path.ts";

/**
 * The gateway's own sign-in for its pages (`/connections`, the confirmation
 * of a connect link): the person signs in at the organisation's OpenID
 * Connect provider, as for a client's authorization, and the browser keeps a
 * signed cookie naming who they are for twelve hours. No client is involved
 * and nothing is stored server-side: the cookie is the whole session, signed
 * with the gateway's session secret under a label of its own.
 */
export const SIGN_IN_PATH = "/connections/sign-in";
/** Where a sign-in returns when it names no page of this gateway to return to. */
const DEFAULT_RETURN = "/connections";

const PERSON_COOKIE = "gw_person";
const SIGN_IN_COOKIE = "gw_sign_in";
const PERSON_TTL_MS = 12 * 60 * 60_000;
const SIGN_IN_TTL_MS = 10 * 60_000;
const PERSON_LABEL = "mcp-edge-gateway person";
const SIGN_IN_LABEL = "mcp-edge-gateway sign-in";

const PersonSchema = z.object({ identity: IdentitySchema, expiresAt: z.number() });
const PendingSignInSchema = z.object({
	state: z.string(),
	verifier: z.string(),
	nonce: z.string(),
	/** A page of this gateway to return to, as `safeReturnPath` resolved it (never another origin). */
	returnTo: z.string(),
	expiresAt: z.number(),
});

type SignInEnv = { Bindings: Env };

/** The routes of the pages' sign-in; 404 when the gateway does not sign people in (no OIDC_ISSUER). */
export function createBrowserSignInRoutes(): Hono<SignInEnv> {
	const routes = new Hono<SignInEnv>();

	routes.get(SIGN_IN_PATH, async (c) => {
		const { oidc, secret, origin } = signInSettings(c.env, c.req.url);
		const returnTo = safeReturnPath(c.req.query("return"), origin, DEFAULT_RETURN);
		const data = newSignInData();
		const pending = { state: randomToken(18), ...data, returnTo, expiresAt: Date.now() + SIGN_IN_TTL_MS };
		const url = await providerSignInUrl(oidc, `${origin}${SIGN_IN_CALLBACK_PATH}`, pending.state, data);
		const headers = new Headers({ location: url.href, "cache-control": "no-store" });
		headers.append(
			"set-cookie",
			cookie(SIGN_IN_COOKIE, await signJson(secret, SIGN_IN_LABEL, pending), origin, SIGN_IN_TTL_MS),
		);
		return new Response(null, { status: 302, headers });
	});

	routes.get(SIGN_IN_CALLBACK_PATH, async (c) => {
		const { oidc, secret, origin } = signInSettings(c.env, c.req.url);
		const url = new URL(c.req.url);
		const pending = await openJson(secret, SIGN_IN_LABEL, cookieValue(c.req.raw, SIGN_IN_COOKIE), PendingSignInSchema);
		// The state must be the one this browser was given: a callback from another browser's sign-in is refused.
		if (!pending || pending.expiresAt < Date.now() || pending.state !== url.searchParams.get("state")) {
			return errorPage(400, "This sign-in was not started in this browser, or it took longer than ten minutes.");
		}
		if (url.searchParams.has("error")) return errorPage(403, "The sign-in at the identity provider was declined.");
		let identity: Identity;
		try {
			({ identity } = await identityFromCallback(oidc, url, `${origin}${SIGN_IN_CALLBACK_PATH}`, pending));
		} catch (error) {
			if (error instanceof SignInRefused) return errorPage(403, `The sign-in failed: ${error.message}.`);
			throw error;
		}
		const person = { identity, expiresAt: Date.now() + PERSON_TTL_MS };
		// Resolved again where the Location is written: a sign-in begun under an older rule obeys today's.
		const location = safeReturnPath(pending.returnTo, origin, DEFAULT_RETURN);
		const headers = new Headers({ location, "cache-control": "no-store" });
		headers.append(
			"set-cookie",
			cookie(PERSON_COOKIE, await signJson(secret, PERSON_LABEL, person), origin, PERSON_TTL_MS),
		);
		headers.append("set-cookie", cookie(SIGN_IN_COOKIE, "", origin, 0));
		return new Response(null, { status: 302, headers });
	});

	routes.onError((error) => {
		if (!(error instanceof GatewayError) || error.kind === "not_found") throw error;
		return errorPage(error.status, error.message);
	});
	return routes;
}

/** Who the browser signed in as on the gateway's pages, or null (no cookie, forged, expired). */
export async function signedInPerson(request: Request, env: Env): Promise<Identity | null> {
	const secret = settingsFrom(env).sessionSecret;
	if (!secret) return null;
	const person = await openJson(secret, PERSON_LABEL, cookieValue(request, PERSON_COOKIE), PersonSchema);
	return person && person.expiresAt > Date.now() ? person.identity : null;
}

/** The Set-Cookie value that signs the browser out of the gateway's pages (the connections page's too). */
export function signedOutCookie(origin: string): string {
	return cookie(PERSON_COOKIE, "", origin, 0);
}

/** Where to send a browser to sign in, coming back to `returnTo` (a page of this gateway; anything else returns to /connections). */
export function signInUrl(returnTo: string): string {
	return `${SIGN_IN_PATH}?return=${encodeURIComponent(returnTo)}`;
}

function signInSettings(env: Env, requestUrl: string) {
	const settings = settingsFrom(env);
	if (settings.oauth.mode !== "gateway") {
		throw new GatewayError("not_found", "Not Found: this gateway does not sign people in (OIDC_ISSUER is not set).");
	}
	if (!settings.sessionSecret) {
		throw new GatewayError("misconfigured", "The gateway is misconfigured: SESSION_SECRET is not set.");
	}
	return { oidc: settings.oauth.oidc, secret: settings.sessionSecret, origin: new URL(requestUrl).origin };
}

/** A cookie's value in the request, or null. */
export function cookieValue(request: Request, name: string): string | null {
	for (const part of (request.headers.get("cookie") ?? "").split(";")) {
		const [key, ...value] = part.trim().split("=");
		if (key === name) return value.join("=");
	}
	return null;
}

/**
 * A cookie only this gateway's pages read: HttpOnly, Secure on https,
 * SameSite=Lax on Path=/ unless `scope` narrows it (the dashboard's are Strict, under /admin).
 */
export function cookie(
	name: string,
	value: string,
	origin: string,
	ttlMs: number,
	scope: { sameSite?: "Lax" | "Strict"; path?: string } = {},
): string {
	const secure = origin.startsWith("https:") ? "; Secure" : "";
	const { sameSite = "Lax", path = "/" } = scope;
	return `${name}=${value}; Path=${path}; HttpOnly; SameSite=${sameSite}; Max-Age=${Math.floor(ttlMs / 1000)}${secure}`;
}
