import { z } from "zod";
import { GatewayError } from "../mcp/gateway-error.ts";
import { randomToken } from "../primitives/crypto.ts";
import { openJson, signJson } from "../primitives/signed-json.ts";
import type { Caller } from "./caller.ts";

/** How long a connect link may be opened (the 10 minutes, as OAuth's `state` too). */
export const CONNECT_LINK_TTL_MS = 10 * 60_000;

/** The path of the page a connect link opens: `/connect/<server>?link=<token>`. */
export const CONNECT_PATH = "/connect";

/**
 * What a connect link stands for: this principal (and their vault) may
 * connect an account at this server's incarnation, once (`nonce`, spent in
 * the vault), until `expiresAt`. Signed with the gateway's session secret
 * under its own label, so no other signed token of the gateway is one.
 */
const ConnectLinkSchema = z.object({
	vault: z.string().min(1),
	principalId: z.string().min(1),
	server: z.string().min(1),
	generation: z.string().min(1),
	/** Spent once in the vault; also the URL elicitation's id, which `notifications/elicitation/complete` names. */
	nonce: z.string().min(16),
	expiresAt: z.number(),
	/** Who, for the operators' listing of connections: a person's issuer, subject and address; null for a key. */
	person: z.object({ issuer: z.string(), subject: z.string(), email: z.string().nullable() }).nullable(),
});
export type ConnectLink = z.infer<typeof ConnectLinkSchema>;

const LINK_LABEL = "mcp-edge-gateway connect link";

/** A new link for `who` to connect `server`, valid for ten minutes from `now`. */
export function newConnectLink(who: Caller, server: { name: string; generation: string }, now: number): ConnectLink {
	const { identity } = who;
	return {
		vault: who.vault,
		principalId: who.principalId,
		person: identity ? { issuer: identity.issuer, subject: identity.subject, email: identity.email } : null,
		server: server.name,
		generation: server.generation,
		nonce: randomToken(18),
		expiresAt: now + CONNECT_LINK_TTL_MS,
	};
}

/** The link as a URL of the gateway at `origin`. */
export async function connectLinkUrl(origin: string, secret: string, link: ConnectLink): Promise<string> {
	const url = new URL(`${CONNECT_PATH}/${link.server}`, origin);
	url.searchParams.set("link", await signJson(secret, LINK_LABEL, link));
	return url.toString();
}

/**
 * The link a token stands for, when the gateway signed it; null for a forged
 * or mangled one. Expiry and single use are for the caller to check (a page
 * says which went wrong).
 */
export function openConnectLink(secret: string, token: string | null): Promise<ConnectLink | null> {
	return openJson(secret, LINK_LABEL, token, ConnectLinkSchema);
}

/** Why the person must connect: words for the sentence. */
export type ConnectReason = "never" | "disconnected" | "refused";

const WHY: Record<ConnectReason, string> = {
	never: "has not been connected yet",
	disconnected: "was disconnected (its authorization ended or was revoked)",
	refused: "was refused by the server even after a refresh",
};

/**
 * The answer to a request that needs a connection the person does not have:
 * MCP's URLElicitationRequiredError (-32042), whose data is the URL-mode
 * elicitation to open (the connect link). Its message holds the link too, for
 * clients that show only the message, and for tool results.
 */
export function connectionRequired(
	server: string,
	url: string,
	elicitationId: string,
	reason: ConnectReason,
): GatewayError {
	const message = `Your account at '${server}' ${WHY[reason]}. Open this link to connect it, then try again: ${url}`;
	return new GatewayError("connection_required", message, {
		server,
		data: { elicitations: [{ mode: "url", elicitationId, url, message: `Connect your account at '${server}'.` }] },
	});
}
