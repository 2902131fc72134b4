/** The gateway the global setup started, as the page tests reach it: its URL and its admin API. */
import type { Page } from "playwright-core";
import { inject } from "vitest";
import { z } from "zod";
import { DEMO_PASSWORD } from "../../../scripts/fixtures/oidc-idp.ts";

export const GATEWAY = inject("pagesGatewayUrl");
export const IDP_ISSUER = inject("pagesIdpIssuer");

/** An admin API call, `/admin<path>`: its JSON (null when it has none); fails on any status but 2xx, quoting the reply. */
export async function admin(method: string, path: string, body?: unknown): Promise<unknown> {
	const response = await fetch(`${GATEWAY}/admin${path}`, {
		method,
		headers: { authorization: `Bearer ${inject("pagesAdminToken")}`, "content-type": "application/json" },
		body: body === undefined ? undefined : JSON.stringify(body),
		signal: AbortSignal.timeout(10_000),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} /admin${path} failed: ${response.status} ${text}`);
	return text === "" ? null : (JSON.parse(text) as unknown);
}

/** Registers a public client (PKCE) with the gateway's authorization server, as an MCP client does (RFC 7591). */
export async function registerClient(name: string, redirectUri: string): Promise<string> {
	const response = await fetch(`${GATEWAY}/oauth/register`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({
			client_name: name,
			redirect_uris: [redirectUri],
			token_endpoint_auth_method: "none",
			grant_types: ["authorization_code", "refresh_token"],
		}),
		signal: AbortSignal.timeout(10_000),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`client registration failed: ${response.status} ${text}`);
	return z.object({ client_id: z.string() }).parse(JSON.parse(text)).client_id;
}

/** Signs in at the identity provider's own login form, as a person types it. */
export async function signInAtProvider(page: Page, login: string): Promise<void> {
	await page.waitForURL((url) => url.origin === IDP_ISSUER);
	await page.getByLabel("User").fill(login);
	await page.getByLabel("Password").fill(DEMO_PASSWORD);
	await page.getByRole("button", { name: "Sign in" }).click();
}
