import { type Context, Hono } from "hono";
import { userIdOf } from "../auth/authorization-server.ts";
import { cookie, cookieValue, signedInPerson, signInUrl } from "../auth/browser-sign-in.ts";
import { settingsFrom } from "../config.ts";
import { UpstreamAuthorizationRefused } from "../credentials/authorization-refused.ts";
import { callerOf } from "../credentials/caller.ts";
import {
	CLIENT_METADATA_PATH,
	CONNECT_CALLBACK_PATH,
	clientMetadataDocument,
} from "../credentials/client-registration.ts";
import { CONNECT_LINK_TTL_MS, connectLinkUrl, newConnectLink, openConnectLink } from "../credentials/connect-link.ts";
import { finishConnection, startConnection } from "../credentials/connect-start.ts";
import { vaultObject } from "../credentials/vault-do.ts";
import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import { randomToken } from "../primitives/crypto.ts";
import { keyMayUseServer } from "../registry/access.ts";
import { parsePrincipalId } from "../registry/access-rules.ts";
import { SERVER_NAME, type ServerRecord } from "../registry/schemas.ts";
import { connected, disconnected } from "./connection-events.ts";
import { type ConnectionRow, connectionsPage, messagePage, signInFirstPage } from "./connection-pages.ts";
import { type PersonPage, personHere } from "./person-here.ts";
import type { EdgeContext } from "./request-context.ts";

/** The cookie binding an authorization flow to the browser that started it. */
const FLOW_COOKIE = "gw_connect";

/** The connections page, for the signed-in person it shows. */
const CONNECTIONS_PAGE: PersonPage = {
	path: "/connections",
	name: "connections",
	shows: "your connections",
	noSignIn:
		"This gateway does not sign people in itself (OIDC_ISSUER is not set), so it has no connections page; connect from the link your client shows.",
};

/**
 * A person connects their own account at an `oauth` server: the connect link
 * a -32042 answer carries (`/connect/<server>?link=`), the callback the
 * server's authorization server sends them back to, the `/connections` page
 * and its buttons, and the gateway's Client ID Metadata Document. Every
 * failure is a page saying what happened; nothing is stored on any of them.
 */
export function createConnectRoutes(): Hono<EdgeContext> {
	const routes = new Hono<EdgeContext>();

	routes.get(CLIENT_METADATA_PATH, (c) =>
		c.json(clientMetadataDocument(new URL(c.req.url).origin), 200, { "cache-control": "public, max-age=3600" }),
	);

	routes.get(CONNECT_CALLBACK_PATH, async (c) => {
		const env = c.env;
		let finished: Awaited<ReturnType<typeof finishConnection>>;
		try {
			finished = await finishConnection(env, c.req.url, cookieValue(c.req.raw, FLOW_COOKIE));
		} catch (error) {
			if (error instanceof UpstreamAuthorizationRefused) {
				return messagePage(400, "The connection was not made", error.message);
			}
			throw error;
		}
		if (finished === "unknown") {
			return messagePage(
				400,
				"This sign-in cannot be used",
				"It was already completed, took longer than ten minutes, or was not started by this gateway. Nothing was stored; start again from your client or your connections page.",
			);
		}
		if (finished === "other-browser") {
			return messagePage(
				403,
				"This sign-in belongs to another browser",
				"It was started in another browser, so the gateway did not use it. Nothing was stored.",
			);
		}
		const ref = parsePrincipalId(finished.principalId);
		const { person } = finished;
		await connected(
			env,
			{
				server: finished.server,
				vault: finished.vault,
				issuer: person?.issuer ?? null,
				subject: person?.subject ?? null,
				keyId: ref ? null : finished.principalId,
				label: person ? (person.email ?? person.subject) : `API key ${finished.principalId}`,
				rule: ref?.rule ?? null,
				connectedAt: finished.connection.connectedAt,
			},
			finished.principalId,
			finished.elicitationId,
		).catch((error: unknown) => {
			// The tokens are stored: the person is connected; the listing and live sessions catch up later.
			console.warn(`connection to ${finished.server} made, but not announced: ${describeError(error)}`);
		});
		const headers = new Headers({ "set-cookie": cookie(FLOW_COOKIE, "", new URL(c.req.url).origin, 0) });
		return messagePage(
			200,
			`Connected to ${finished.server}`,
			`Your account at ${finished.server} is connected. You can close this tab and return to your client.`,
			true,
			headers,
		);
	});

	routes.get("/connect/:server", async (c) => {
		const env = c.env;
		const settings = settingsFrom(env);
		const name = c.req.param("server");
		if (!settings.sessionSecret) throw misconfigured();
		const link = await openConnectLink(settings.sessionSecret, c.req.query("link") ?? null);
		if (!link || link.server !== name) {
			return messagePage(
				400,
				"This connect link is not valid",
				"Ask your client again for a link. Nothing was stored.",
			);
		}
		if (link.expiresAt < Date.now()) {
			return messagePage(
				410,
				"This connect link has expired",
				"Connect links last ten minutes. Ask your client again for a link. Nothing was stored.",
			);
		}
		// A person's link works only in a browser signed in as that person: a forwarded link would
		// otherwise connect whoever opens it to the person's gateway account. A key's link is the capability.
		if (parsePrincipalId(link.principalId) && settings.oauth.mode === "gateway") {
			const identity = await signedInPerson(c.req.raw, env);
			const here = `${new URL(c.req.url).pathname}${new URL(c.req.url).search}`;
			if (!identity) {
				return signInFirstPage(signInUrl(here), "Sign in to the gateway first, to confirm that this link is yours.");
			}
			if (`person:${await userIdOf(identity)}` !== link.vault) {
				return messagePage(
					403,
					"This link was made for someone else",
					"You are signed in to the gateway as another person than the one this link was made for. Nothing was stored.",
				);
			}
		}
		const server = await oauthServer(c, name);
		if (!server || server.generation !== link.generation) {
			return messagePage(
				404,
				"This server cannot be connected",
				`There is no server '${name}' to connect to any more.`,
			);
		}
		if (!(await vaultObject(env, link.vault).useLink(link.nonce, link.expiresAt))) {
			return messagePage(
				410,
				"This connect link was already used",
				"Each link can be used once. Ask your client again for a link. Nothing was stored.",
			);
		}
		const browserSecret = randomToken(24);
		const origin = new URL(c.req.url).origin;
		let location: string;
		try {
			location = await startConnection(env, origin, server, link, browserSecret);
		} catch (error) {
			if (error instanceof UpstreamAuthorizationRefused) {
				return messagePage(502, `${name} cannot be connected now`, error.message);
			}
			throw error;
		}
		const headers = new Headers({ location, "cache-control": "no-store" });
		headers.append("set-cookie", cookie(FLOW_COOKIE, browserSecret, origin, CONNECT_LINK_TTL_MS));
		return new Response(null, { status: 302, headers });
	});

	routes.get("/connections", async (c) => {
		const person = await personHere(c, CONNECTIONS_PAGE);
		if (person instanceof Response) return person;
		const servers = await c.get("reader").servers();
		const mine = servers.filter(
			(server) => server.auth.type === "oauth" && keyMayUseServer(person.record, server.name),
		);
		const held = new Map((await vaultObject(c.env, person.vault).connections()).map((row) => [row.server, row]));
		const rows: ConnectionRow[] = mine.map((server) => {
			const known = held.get(server.name);
			return {
				server: server.name,
				state: known === undefined ? "not connected" : known.state,
				connectedAt: known?.state === "connected" ? known.connectedAt : null,
			};
		});
		return connectionsPage(person.identity.email ?? person.identity.subject, rows);
	});

	routes.post("/connections/connect", async (c) => {
		const person = await personHere(c, CONNECTIONS_PAGE);
		if (person instanceof Response) return person;
		const name = await postedServer(c);
		const server = name === null ? null : await oauthServer(c, name);
		if (!server || !keyMayUseServer(person.record, server.name)) {
			return messagePage(404, "This server cannot be connected", "It is not a server you may connect.");
		}
		const secret = settingsFrom(c.env).sessionSecret;
		if (!secret) throw misconfigured();
		const link = newConnectLink(callerOf(person.record.id, person.identity), server, Date.now());
		return c.redirect(await connectLinkUrl(new URL(c.req.url).origin, secret, link), 303);
	});

	routes.post("/connections/disconnect", async (c) => {
		const person = await personHere(c, CONNECTIONS_PAGE);
		if (person instanceof Response) return person;
		const name = await postedServer(c);
		if (name !== null) await disconnected(c.env, person.vault, name);
		return c.redirect("/connections", 303);
	});

	// A person at a browser reads these: every failure is a page with a sentence, the detail in the log.
	routes.onError((error) => {
		if (error instanceof GatewayError) {
			if (error.kind === "not_found") throw error;
			return messagePage(error.status, "Something went wrong", error.message);
		}
		console.error(`connect page failed: ${describeError(error)}`);
		return messagePage(
			500,
			"Something went wrong",
			"The gateway could not finish this step; its log says why. Nothing was stored.",
		);
	});
	return routes;
}

/** The server `name` when it exists and takes each person's own account; null otherwise. */
async function oauthServer(c: Context<EdgeContext>, name: string): Promise<ServerRecord | null> {
	if (!SERVER_NAME.test(name)) return null;
	const endpoint = await c.get("reader").endpoint(name);
	return endpoint?.kind === "server" && endpoint.server.auth.type === "oauth" ? endpoint.server : null;
}

async function postedServer(c: Context<EdgeContext>): Promise<string | null> {
	const form = await c.req.raw.formData().catch(() => new FormData());
	const name = String(form.get("server") ?? "");
	return SERVER_NAME.test(name) ? name : null;
}

function misconfigured(): GatewayError {
	return new GatewayError("misconfigured", "The gateway is misconfigured: SESSION_SECRET is not set.");
}
