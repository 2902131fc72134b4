import {
	AuthorizationError,
	authorizationErrorRedirect,
	CimdFetchError,
	type OAuthHelpers,
} from "@cloudflare/workers-oauth-provider";
import { type Context, Hono } from "hono";
import { type OAuthSettings, settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { ruleFor } from "../registry/access-rules.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import { registryUnavailable } from "../registry/registry-unavailable.ts";
import {
	AUTHORIZE_PATH,
	authorizationServer,
	CALLBACK_PATH,
	GATEWAY_SCOPE,
	type GrantProps,
	oauthKv,
	userIdOf,
} from "./authorization-server.ts";
import type { ClaimedIdentity } from "./identity.ts";
import {
	identityFromCallback,
	newSignInData,
	providerSignInUrl,
	SignInDataSchema,
	SignInRefused,
} from "./oidc-client.ts";
import { consentPage, errorPage, refusalPage } from "./pages.ts";
import { ACCESS_DENIED_DESCRIPTION, logRefusal, REFUSALS, refusalReason } from "./refusal.ts";

type SignInEnv = { Bindings: Env; Variables: { reader: RegistryReader } };
type Oidc = Extract<OAuthSettings, { mode: "gateway" }>["oidc"];

/**
 * The authorization endpoint of the gateway's own authorization server:
 * consent first (which client, which gateway), then sign-in at the
 * organisation's OpenID Connect provider, then the access rules decide. The
 * library binds each step to the browser (consent handle, upstream state), so
 * none can be forged from another site or replayed in another browser.
 */
export function createSignInRoutes(): Hono<SignInEnv> {
	const routes = new Hono<SignInEnv>();

	routes.get(AUTHORIZE_PATH, async (c) => {
		const { api } = gatewayAs(c);
		const request = await parsed(() => api.parseAuthRequest(c.req.raw));
		if (request instanceof Response) return request;
		const details = await api.describeConsent(request);
		const consent = await api.beginConsent(request);
		consent.headers.set("content-type", "text/html; charset=utf-8");
		return new Response(consentPage(details, consent.handle, new URL(c.req.url).host), { headers: consent.headers });
	});

	routes.post(AUTHORIZE_PATH, async (c) => {
		const { api, oidc, origin } = gatewayAs(c);
		const form = await c.req.raw.formData().catch(() => new FormData());
		const handle = String(form.get("handle") ?? "");
		if (form.get("decision") !== "approve") {
			const denied = await parsed(() => api.denyConsent(c.req.raw, handle));
			return denied instanceof Response ? denied : new Response(null, { status: 302, headers: denied.headers });
		}
		const approved = await parsed(() => api.approveConsent(c.req.raw, handle, { scope: [GATEWAY_SCOPE] }));
		if (approved instanceof Response) return approved;
		const data = newSignInData();
		const { state, headers } = await api.beginUpstream(approved.request, { data, headers: approved.headers });
		headers.set("location", (await providerSignInUrl(oidc, `${origin}${CALLBACK_PATH}`, state, data)).href);
		return new Response(null, { status: 302, headers });
	});

	routes.get(CALLBACK_PATH, async (c) => {
		const { api, oidc, origin } = gatewayAs(c);
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
		const rules = await c
			.get("reader")
			.rules()
			.catch((error: unknown) => {
				throw registryUnavailable(error);
			});
		const { identity } = claimed;
		const rule = ruleFor(rules, identity, oidc.issuer);
		const userId = await userIdOf(identity);
		if (!rule) {
			// Who tried is the operator's to know; the client (anyone may register one) learns only that it was refused.
			const reason = refusalReason(rules, claimed, oidc.issuer);
			logRefusal("oauth_sign_in_refused", claimed, reason, { userId, client: request.clientId });
			const back = authorizationErrorRedirect(request, "access_denied", ACCESS_DENIED_DESCRIPTION);
			return refusalPage(REFUSALS[reason], url.host, back, headers);
		}
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

/** The authorization server for this request's origin; 404 when the gateway does not sign people in. */
function gatewayAs(c: Context<SignInEnv>): { api: OAuthHelpers; oidc: Oidc; origin: string } {
	const oauth = settingsFrom(c.env).oauth;
	if (oauth.mode !== "gateway") {
		throw new GatewayError("not_found", "Not Found: this gateway does not sign people in (OIDC_ISSUER is not set).");
	}
	oauthKv(c.env);
	const origin = new URL(c.req.url).origin;
	return { api: authorizationServer(origin, settingsFrom(c.env)).getOAuthApi(c.env), oidc: oauth.oidc, origin };
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
