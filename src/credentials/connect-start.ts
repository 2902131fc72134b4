import { z } from "zod";
import type { Env } from "../env.ts";
import { randomToken, sha256Hex } from "../primitives/crypto.ts";
import type { ServerRecord } from "../registry/schemas.ts";
import {
	authorizationUrl,
	completeAuthorization,
	type NewConnection,
	PendingAuthorizationSchema,
	scopesFor,
} from "./authorization-flow.ts";
import { type ClientStore, clientFor, connectCallbackUrl } from "./client-registration.ts";
import { type ConnectFlow, ConnectFlowSchema } from "./connect-flow.ts";
import type { ConnectLink } from "./connect-link.ts";
import { oauthSettingsOf } from "./oauth-tokens.ts";
import type { StoredConnection } from "./stored-connection.ts";
import { discoverUpstreamAuthorization, UpstreamAuthorizationSchema } from "./upstream-discovery.ts";
import { vaultObject } from "./vault-do.ts";

/** What a flow keeps of its start, for the callback: the authorization server as discovered, and the PKCE half. */
const StartedSchema = z.object({
	authorization: UpstreamAuthorizationSchema,
	pending: PendingAuthorizationSchema,
	person: z.object({ issuer: z.string(), subject: z.string(), email: z.string().nullable() }).nullable(),
});

/** The OAuth `state` the authorization server sends back: the vault to find the flow in, and the flow's handle. */
const STATE_SEPARATOR = ".";

/** The server's OAuth client registration, kept by its own vault object (per server and incarnation). */
function clientStoreOf(env: Env, server: Pick<ServerRecord, "name" | "generation">): ClientStore {
	const store = vaultObject(env, `client:${server.name}:${server.generation}`);
	return {
		get: () => store.registeredClient(),
		put: (client) => store.saveRegisteredClient(client),
		drop: async () => {
			await store.dropRegisteredClient();
		},
	};
}

/**
 * Starts a person's connection at an `oauth` server, from a link already
 * checked and spent: discovery, the gateway's client there, PKCE, a flow kept
 * sealed in the person's vault under a fresh state, bound to this browser
 * (`browserSecret`, a cookie's value, of which only a digest is kept).
 * Returns where to send the browser. Throws `UpstreamAuthorizationRefused`
 * (a sentence for the page) when the server cannot be connected.
 */
export async function startConnection(
	env: Env,
	origin: string,
	server: ServerRecord,
	link: ConnectLink,
	browserSecret: string,
): Promise<string> {
	if (server.auth.type !== "oauth") throw new Error("only oauth servers are connected");
	const settings = oauthSettingsOf(env);
	const authorization = await discoverUpstreamAuthorization({ serverUrl: server.url, settings });
	const client = await clientFor({
		auth: server.auth,
		authorization,
		origin,
		store: clientStoreOf(env, server),
		settings,
	});
	const { url, pending } = await authorizationUrl({
		authorization,
		client,
		redirectUri: connectCallbackUrl(origin),
		scopes: scopesFor(server.auth, authorization),
	});
	const handle = randomToken(24);
	const flow: ConnectFlow = {
		server: server.name,
		generation: server.generation,
		principalId: link.principalId,
		browserBinding: await sha256Hex(browserSecret),
		codeVerifier: pending.codeVerifier,
		redirectUri: pending.redirectUri,
		elicitationId: link.nonce,
		issuerMetadata: { authorization, pending: { ...pending, state: stateOf(link.vault, handle) }, person: link.person },
		createdAt: Date.now(),
	};
	await vaultObject(env, link.vault).beginFlow(handle, flow);
	const sent = new URL(url);
	sent.searchParams.set("state", stateOf(link.vault, handle));
	return sent.href;
}

function stateOf(vault: string, handle: string): string {
	return `${btoa(vault).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")}${STATE_SEPARATOR}${handle}`;
}

/** The vault and the flow's handle a `state` names; null for one the gateway did not make. */
export function parseState(state: string | null): { vault: string; handle: string } | null {
	const [encoded, handle, ...rest] = (state ?? "").split(STATE_SEPARATOR);
	if (!encoded || !handle || rest.length > 0 || handle.length < 16) return null;
	try {
		const vault = atob(encoded.replace(/-/g, "+").replace(/_/g, "/"));
		return /^(person|key):[A-Za-z0-9_~.-]+$/.test(vault) ? { vault, handle } : null;
	} catch (error) {
		if (error instanceof DOMException) return null;
		throw error;
	}
}

/** What a finished flow came to: the connection as stored, for whom, and the elicitation it completes. */
export interface FinishedConnection {
	vault: string;
	principalId: string;
	server: string;
	elicitationId: string | null;
	/** Who, for the operators' listing; null for an API key. */
	person: { issuer: string; subject: string; email: string | null } | null;
	connection: StoredConnection;
}

/**
 * Finishes a flow at the callback: the flow taken from the vault once (a
 * replayed, expired or forged state finds none), the browser the one that
 * started it, then the code exchanged and the tokens stored sealed in the
 * vault. Null when there is no such flow or it is another browser's: nothing
 * is stored then. Throws `UpstreamAuthorizationRefused` for the authorization
 * server's refusals.
 */
export async function finishConnection(
	env: Env,
	callbackUrl: string,
	browserSecret: string | null,
): Promise<FinishedConnection | "unknown" | "other-browser"> {
	const state = parseState(new URL(callbackUrl).searchParams.get("state"));
	if (!state) return "unknown";
	const vault = vaultObject(env, state.vault);
	// Parsed again: the RPC types a flow's free-form metadata away.
	const flow = ConnectFlowSchema.nullable().parse(await vault.takeFlow(state.handle));
	if (!flow) return "unknown";
	if (browserSecret === null || (await sha256Hex(browserSecret)) !== flow.browserBinding) return "other-browser";
	const started = StartedSchema.parse(flow.issuerMetadata);
	const made: NewConnection = await completeAuthorization({
		callbackUrl,
		pending: started.pending,
		authorization: started.authorization,
		vars: env,
		settings: oauthSettingsOf(env),
		store: clientStoreOf(env, { name: flow.server, generation: flow.generation }),
	});
	const connection: StoredConnection = {
		...made,
		server: flow.server,
		generation: flow.generation,
		connectedAt: Date.now(),
	};
	await vault.saveConnection(connection);
	return {
		vault: state.vault,
		principalId: flow.principalId,
		server: flow.server,
		elicitationId: flow.elicitationId,
		person: started.person,
		connection,
	};
}
