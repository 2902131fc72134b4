import { describe, expect, inject, it } from "vitest";
import { Browser } from "../scripts/fixtures/browser.ts";
import { gatewayCallbackUrls } from "../src/auth/provider-callbacks.ts";
import { safeReturnPath } from "../src/auth/return-path.ts";
import { TEST_ADMIN_BEARER } from "./support/gateway.ts";
import { gatewayWith, ORIGIN } from "./support/oauth-client.ts";

const IDP = inject("idpIssuer");
const SIGN_IN = {
	OIDC_ISSUER: IDP,
	OIDC_CLIENT_ID: "mcp-edge-gateway",
	OIDC_CLIENT_SECRET: "test-oidc-client-secret-0123456789",
};
const signingIn = gatewayWith(SIGN_IN);

/**
 * Returns that would take a browser to another site once the browser resolves
 * them (decoded, as `?return=` carries them): a backslash the browser reads as
 * `/`, a tab it drops, a scheme-relative and an absolute URL.
 */
const OFF_SITE = [
	"/\\evil.example/pwn",
	"/\t/evil.example",
	"/\\t/evil.example",
	"//evil.example",
	"https://evil.example",
	"/\n/evil.example",
] as const;

/** `?return=` as a link carries `value`. */
const returnQuery = (value: string) => `return=${encodeURIComponent(value)}`;

/** A browser on the gateway (and the provider, over the network) that never loads another site: it stops there. */
function newBrowser(): Browser {
	return new Browser((url) => (url.origin === ORIGIN ? signingIn : undefined));
}
const offSite = (url: URL) => url.origin !== ORIGIN && url.origin !== IDP;

/** The dashboard's form posts as a browser on the gateway's own pages sends them. */
function formPost(path: string, fields: Record<string, string>) {
	return signingIn(`${ORIGIN}${path}`, {
		method: "POST",
		headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
		body: new URLSearchParams(fields).toString(),
		redirect: "manual",
	});
}

describe("safeReturnPath: a return resolved against the gateway's origin", () => {
	it("keeps a page of the gateway, with its query and fragment, as the browser will resolve it", () => {
		const kept = [
			["/", "/"],
			["/connections", "/connections"],
			["/connect/notes?link=abc.def", "/connect/notes?link=abc.def"],
			["/admin/", "/admin/"],
			["/admin/docs#post-admin-keys", "/admin/docs#post-admin-keys"],
			["/admin/ui/servers/notes", "/admin/ui/servers/notes"],
			// Dot segments are resolved first, and the result is what is checked and sent.
			["/admin/ui/../docs", "/admin/docs"],
		];
		for (const [requested, resolved] of kept) {
			expect(safeReturnPath(requested, ORIGIN, "/fallback"), requested).toBe(resolved);
		}
	});

	it("gives the fallback for a return that leaves the gateway, hides a separator, or names no page of it", () => {
		const refused = [
			...OFF_SITE,
			// Raw control characters and DEL, anywhere.
			"/connections\u0000",
			"/admin/\u007f",
			// Percent-encoded backslashes and control characters, once or twice over.
			"/%5Cevil.example",
			"/%255cevil.example",
			"/%09/evil.example",
			"/%2509/evil.example",
			"/connections%0d%0aSet-Cookie:x=y",
			// Not a path of the gateway's pages.
			"/healthz",
			"/mcp",
			"/admin",
			"/connections/../mcp",
			"/oauth/token",
			"javascript:alert(1)",
			"connections",
			"",
			null,
			undefined,
		];
		for (const requested of refused) {
			expect(safeReturnPath(requested, ORIGIN, "/fallback"), JSON.stringify(requested)).toBe("/fallback");
		}
	});
});

describe("the pages' sign-in (/connections/sign-in) returns only to the gateway's own pages", () => {
	it("after a real sign-in at the provider, lands on /connections for every return that would leave the gateway", async () => {
		for (const value of OFF_SITE) {
			const browser = newBrowser();
			const form = await browser.get(`${ORIGIN}/connections/sign-in?${returnQuery(value)}`, { stopAt: offSite });
			expect(form.url.origin, JSON.stringify(value)).toBe(IDP);
			const landed = await browser.submit(form, { fields: { login: "alice", password: "demo" } }, { stopAt: offSite });
			expect(landed.url.href, JSON.stringify(value)).toBe(`${ORIGIN}/connections`);
		}
	});

	it("after a real sign-in, lands on the page of the gateway it was asked to return to, query included", async () => {
		const browser = newBrowser();
		const form = await browser.get(`${ORIGIN}/connections/sign-in?${returnQuery("/connect/notes?link=abc")}`);
		const landed = await browser.submit(form, { fields: { login: "alice", password: "demo" } }, { stopAt: offSite });
		expect(landed.url.href).toBe(`${ORIGIN}/connect/notes?link=abc`);
	});

	it("asks the provider to send the person back to a callback gatewayCallbackUrls lists (what npm start registers)", async () => {
		const response = await signingIn(`${ORIGIN}/connections/sign-in`, { redirect: "manual" });
		expect(response.status).toBe(302);
		const redirectUri = new URL(response.headers.get("location") ?? "").searchParams.get("redirect_uri");
		expect(gatewayCallbackUrls(ORIGIN)).toContain(redirectUri);
	});
});

describe("the dashboard's sign-ins return only to the gateway's own pages", () => {
	it("the sign-in page carries a return of the gateway into the token's form and the organisation's link", async () => {
		const response = await signingIn(`${ORIGIN}/admin/ui/sign-in?${returnQuery("/admin/docs")}`);
		expect(response.status).toBe(200);
		const html = await response.text();
		expect(html).toContain('<input type="hidden" name="return" value="/admin/docs"/>');
		expect(html).toContain('href="/admin/ui/sign-in/person?return=%2Fadmin%2Fdocs"');
	});

	it("the sign-in page turns a return that would leave the gateway into the overview, in the form and the link", async () => {
		for (const value of OFF_SITE) {
			const html = await (await signingIn(`${ORIGIN}/admin/ui/sign-in?${returnQuery(value)}`)).text();
			expect(html, JSON.stringify(value)).toContain('<input type="hidden" name="return" value="/admin/"/>');
			expect(html, JSON.stringify(value)).toContain('href="/admin/ui/sign-in/person"');
			expect(html, JSON.stringify(value)).not.toContain("evil.example");
		}
	});

	it("the admin token's form sends the browser to the page it names, and to /admin/ for any return that would leave the gateway", async () => {
		const back = await formPost("/admin/ui/sign-in", { token: TEST_ADMIN_BEARER, return: "/admin/docs" });
		expect(back.status).toBe(303);
		expect(back.headers.get("location")).toBe("/admin/docs");
		for (const value of OFF_SITE) {
			const response = await formPost("/admin/ui/sign-in", { token: TEST_ADMIN_BEARER, return: value });
			expect(response.status, JSON.stringify(value)).toBe(303);
			expect(response.headers.get("location"), JSON.stringify(value)).toBe("/admin/");
		}
	});

	it("a wrong token's page keeps the return for the next try, and sets no cookie", async () => {
		const response = await formPost("/admin/ui/sign-in", { token: "not-the-token", return: "/admin/docs" });
		expect(response.status).toBe(401);
		expect(response.headers.getSetCookie()).toEqual([]);
		expect(await response.text()).toContain('<input type="hidden" name="return" value="/admin/docs"/>');
	});

	it("the organisation's sign-in passes on only a page of the gateway, and /admin/ for anything else", async () => {
		const asked = await signingIn(`${ORIGIN}/admin/ui/sign-in/person?${returnQuery("/admin/docs")}`, {
			redirect: "manual",
		});
		expect(asked.status).toBe(303);
		expect(asked.headers.get("location")).toBe("/connections/sign-in?return=%2Fadmin%2Fdocs");
		for (const value of OFF_SITE) {
			const response = await signingIn(`${ORIGIN}/admin/ui/sign-in/person?${returnQuery(value)}`, {
				redirect: "manual",
			});
			expect(response.headers.get("location"), JSON.stringify(value)).toBe("/connections/sign-in?return=%2Fadmin%2F");
		}
	});

	it("a dashboard page opened without a sign-in offers a sign-in that comes back to it", async () => {
		const response = await signingIn(`${ORIGIN}/admin/ui/servers/notes`);
		expect(response.status).toBe(401);
		const html = await response.text();
		expect(html).toContain('<input type="hidden" name="return" value="/admin/ui/servers/notes"/>');
		expect(html).toContain('href="/admin/ui/sign-in/person?return=%2Fadmin%2Fui%2Fservers%2Fnotes"');
	});
});
