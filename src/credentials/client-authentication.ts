import type * as oauth from "oauth4webapi";
import { ClientSecretBasic, ClientSecretPost, None } from "oauth4webapi";
import { resolveReferences } from "../upstream/upstream-target.ts";
import { UpstreamAuthorizationRefused } from "./authorization-refused.ts";
import type { OAuthClient } from "./stored-connection.ts";

/**
 * How the gateway authenticates as `client` at a token or revocation
 * endpoint: no secret (a public client: DCR with `none`, or the Client ID
 * Metadata Document), or its secret by HTTP Basic or in the form body. The
 * operator's secret is a `${UPSTREAM_…}` reference resolved from the Worker's
 * vars only now, by the rule headers follow, so rotating it needs no change
 * to anything stored. The one place every token endpoint request gets its
 * client authentication from.
 */
export function clientAuthentication(client: OAuthClient, vars: Record<string, unknown>): oauth.ClientAuth {
	if (client.authMethod === "none") return None();
	const secret = secretOf(client, vars);
	return client.authMethod === "client_secret_basic" ? ClientSecretBasic(secret) : ClientSecretPost(secret);
}

function secretOf(client: OAuthClient, vars: Record<string, unknown>): string {
	if (client.secretReference !== null) {
		const resolved = resolveReferences(client.secretReference, vars);
		if ("value" in resolved) return resolved.value;
		console.error(`oauth client ${client.clientId}: misconfigured: its client secret ${resolved.problem}`);
		throw new UpstreamAuthorizationRefused(
			"misconfigured",
			"The gateway's client secret for this server is not set up, so it cannot connect you; the operator's logs say why.",
		);
	}
	if (client.clientSecret !== null) return client.clientSecret;
	throw new UpstreamAuthorizationRefused(
		"misconfigured",
		"The gateway's client for this server needs a secret and has none, so it cannot connect you.",
	);
}

/** The client as oauth4webapi names it. */
export function oauthClientOf(client: OAuthClient): oauth.Client {
	return { client_id: client.clientId };
}
