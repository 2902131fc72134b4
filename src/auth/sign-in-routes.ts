import {
	AuthorizationError,
	type AuthRequest,
	authorizationErrorRedirect,
	CimdFetchError,
	type OAuthHelpers,
} from "@cloudflare/workers-oauth-provider";
import { type Context, Hono } from "hono";
import { z } from "zod";
import { type OAuthSettings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { type AccessRuleRecord, ruleFor } from "../registry/access-rules.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import {
	AUTHORIZE_PATH,
	authorizationServer,
	GATEWAY_SCOPE,
	type GrantProps,
	oauthKv,
	userIdOf,
} from "./authorization-server.ts";
import { keepForConsent, takeForConsent } from "./consent-person.ts";
import type { ClaimedIdentity } from "./identity.ts";
import {
	identityFromCallback,
	newSignInData,
	providerSignInUrl,
	SignInDataSchema,
	SignInRefused,
} from "./oidc-client.ts";
import { type ConsentServers, consentPage, errorPage, pageResponse, refusalPage } from "./pages.ts";
import { CALLBACK_PATH } from "./provider-callbacks.ts";
import { ACCESS_DENIED_DESCRIPTION, logRefusal, REFUSALS, refusalReason } from "./refusal.ts";

/** What these routes read of the edge's request context: the request's reader, which rejects a failed read as `registry_unavailable`. */
type SignInEnv = { Bindings: Env; Variables: { reader: RegistryReader } };
type Oidc = Extract<OAuthSettings, { mode: "gateway" }>["oidc"];

/** The consent form as the page sends it: its handle and the button pressed. */
const ConsentFormSchema = z.object({
	handle: z.string().min(1).max(512),
	decision: z.enum(["approve", "deny"]),
});

/**
 * The authorization endpoint of the gateway's own authorization server:
 * sign-in first, at the organisation's OpenID Connect provider; then the
 * access rules decide (a person none admits sees the refusal page and is
 * asked nothing); then the consent page names the client, the person and the
 * servers they will reach; only an Allow there issues a code. The library
 * binds each step to the browser (the upstream `state`, then the consent
 * handle), so none can be forged from another site or replayed in another
 * browser, and no code reaches a client the person did not approve.
 */
export function createSignInRoutes(): Hono<SignInEnv> {
	const routes = new Hono<SignInEnv>();

	routes.get(AUTHORIZE_PATH, async (c) => {
		const { api, oidc, origin } = gatewayAs(c);
		const request = await parsed(() => api.parseAuthRequest(c.req.raw));
		if (request instanceof Response) return request;
		// A client whose metadata document cannot be used is refused here, before anyone signs in.
		const described = await parsed(() => api.describeConsent(request));
		if (described instanceof Response) return described;
		const data = newSignInData();
		const { state, headers } = await api.beginUpstream(request, { data });
		headers.set("location", (await providerSignInUrl(oidc, `${origin}${CALLBACK_PATH}`, state, data)).href);
		return new Response(null, { status: 302, headers });
	});

	routes.get(CALLBACK_PATH, async (c) => {
		const { api, oidc, origin, secret } = gatewayAs(c);
		const resumed = await parsed(() => api.finishUpstream<unknown>(c.req.raw));
		if (resumed instanceof Response) return resumed;
		const { request, headers } = resumed;
		const refuse = (code: "access_denied", description: string) => {
			headers.set("location", authorizationErrorRedirect(request, code, description));
			return new Response(null, { status: 302, headers });
		};
		const url = new URL(c.req.url);
		if (url.searchParams.has("error")) {
			return refuse("access_denied", "The sign-in at the identity provider was declined or failed.");
		}
		const data = SignInDataSchema.safeParse(resumed.data);
		if (!data.success) return errorPage(400, "The sign-in's stored state is not readable.");
		let claimed: ClaimedIdentity;
		try {
			claimed = await identityFromCallback(oidc, url, `${origin}${CALLBACK_PATH}`, data.data);
		} catch (error) {
			if (error instanceof SignInRefused) return refuse("access_denied", `The sign-in failed: ${error.message}.`);
			throw error;
		}
		const rules = await c.get("reader").rules();
		const rule = ruleFor(rules, claimed.identity, oidc.issuer);
		if (!rule) return refused(rules, claimed, request, url.host, headers, oidc);
		const described = await parsed(() => api.describeConsent(request));
		if (described instanceof Response) return described;
		const consent = await api.beginConsent(request);
		for (const [name, value] of consent.headers) {
			if (name === "set-cookie") headers.append(name, value);
			else headers.set(name, value);
		}
		const { identity, displayName } = claimed;
		headers.append(
			"set-cookie",
			await keepForConsent(secret, origin, consent.handle, { identity, displayName: displayName ?? null }),
		);
		const person = { name: displayName ?? null, account: identity.email ?? identity.subject };
		const servers = await serversOf(c, rule);
		return pageResponse(200, consentPage(described, consent.handle, url.host, person, servers), headers);
	});

	routes.post(AUTHORIZE_PATH, async (c) => {
		const { api, oidc, origin, secret } = gatewayAs(c);
		// The handle's cookie is SameSite=Lax already; a post from another origin is refused before it is read.
		if (c.req.header("origin") !== origin) {
			return errorPage(403, "This form may only be sent from the gateway's own consent page.");
		}
		const posted = await c.req.raw.formData().catch(() => new FormData());
		const form = ConsentFormSchema.safeParse({ handle: posted.get("handle"), decision: posted.get("decision") });
		if (!form.success) {
			return errorPage(400, "The consent form did not say Allow or Deny for a consent page of this gateway.");
		}
		const { handle, decision } = form.data;
		const { person, clear } = await takeForConsent(c.req.raw, secret, origin, handle);
		if (decision === "deny") {
			const denied = await parsed(() => api.denyConsent(c.req.raw, handle));
			if (denied instanceof Response) return denied;
			denied.headers.append("set-cookie", clear);
			return new Response(null, { status: 302, headers: denied.headers });
		}
		const approved = await parsed(() => api.approveConsent(c.req.raw, handle, { scope: [GATEWAY_SCOPE] }));
		if (approved instanceof Response) return approved;
		const { request, headers } = approved;
		headers.append("set-cookie", clear);
		if (!person) {
			return errorPage(
				400,
				"This consent page was not opened in this browser, or it took longer than ten minutes.",
				headers,
			);
		}
		// The rules may have changed while the page was open: they decide again, now.
		const rules = await c.get("reader").rules();
		const rule = ruleFor(rules, person.identity, oidc.issuer);
		if (!rule) {
			const claimed = { identity: person.identity, unverifiedEmail: null };
			return refused(rules, claimed, request, new URL(c.req.url).host, headers, oidc);
		}
		const { identity } = person;
		const userId = await userIdOf(identity);
		const props: GrantProps = { identity };
		const { redirectTo } = await api.completeAuthorization({
			request,
			userId,
			metadata: { rule: rule.name, label: identity.email ?? identity.subject },
			scope: request.scope,
			props,
		});
		console.log(JSON.stringify({ event: "oauth_sign_in", userId, rule: rule.name, client: request.clientId }));
		headers.set("location", redirectTo);
		return new Response(null, { status: 302, headers });
	});

	// A person at a browser reads these pages: the gateway's own failures (the provider or the
	// registry unreachable) are a page with the sentence too, not a JSON-RPC body.
	routes.onError((error) => {
		if (!(error instanceof GatewayError) || error.kind === "not_found") throw error;
		return errorPage(error.status, error.message);
	});

	return routes;
}

/**
 * The refusal page for a person no rule admits. Who tried is the operator's to
 * know (the log line); the client (anyone may register one) learns only that
 * it was refused.
 */
async function refused(
	rules: readonly AccessRuleRecord[],
	claimed: ClaimedIdentity,
	request: AuthRequest,
	host: string,
	headers: Headers,
	oidc: Oidc,
): Promise<Response> {
	const reason = refusalReason(rules, claimed, oidc.issuer);
	const userId = await userIdOf(claimed.identity);
	logRefusal("oauth_sign_in_refused", claimed, reason, { userId, client: request.clientId });
	const back = authorizationErrorRedirect(request, "access_denied", ACCESS_DENIED_DESCRIPTION);
	return refusalPage(REFUSALS[reason], host, back, headers);
}

/** The servers a rule lets its people reach, as the consent page names them: its list, or every server. */
async function serversOf(c: Context<SignInEnv>, rule: AccessRuleRecord): Promise<ConsentServers> {
	if (rule.servers !== null) return { all: false, names: rule.servers };
	const servers = await c.get("reader").servers();
	return { all: true, names: servers.map((server) => server.name).sort() };
}

/** The authorization server for this request's origin; 404 when the gateway does not sign people in. */
function gatewayAs(c: Context<SignInEnv>): { api: OAuthHelpers; oidc: Oidc; origin: string; secret: string } {
	const settings = settingsFrom(c.env);
	const oauth = settings.oauth;
	if (oauth.mode !== "gateway") {
		throw new GatewayError("not_found", "Not Found: this gateway does not sign people in (OIDC_ISSUER is not set).");
	}
	oauthKv(c.env);
	// The person is carried from the sign-in to the consent form under it (consent-person.ts).
	if (!settings.sessionSecret) {
		throw new GatewayError("misconfigured", "The gateway is misconfigured: SESSION_SECRET is not set.");
	}
	const origin = new URL(c.req.url).origin;
	const api = authorizationServer(origin, settings).getOAuthApi(c.env);
	return { api, oidc: oauth.oidc, origin, secret: settings.sessionSecret };
}

/**
 * Runs a step the library validates. A request it refuses is answered as
 * the library says: back to the client when its redirect URI was verified
 * (error, state and `iss`), else on a page here, never redirected.
 */
async function parsed<T>(step: () => Promise<T>): Promise<T | Response> {
	try {
		return await step();
	} catch (error) {
		// A client metadata document that cannot be fetched or does not validate: the client is unknown.
		if (error instanceof CimdFetchError) {
			return errorPage(
				400,
				"The app's client metadata document could not be used (unreachable, too large, or not matching its URL).",
			);
		}
		if (!(error instanceof AuthorizationError)) throw error;
		if (error.redirectTo) return new Response(null, { status: 302, headers: { location: error.redirectTo } });
		return errorPage(400, error.description);
	}
}
