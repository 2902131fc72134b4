import type { Context } from "hono";
import { jwksDocument } from "../credentials/identity-assertion.ts";
import { SigningKeyMisconfigured } from "../credentials/signing-keys.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import type { EdgeContext } from "./request-context.ts";

/** Verifiers refetch at most this often; a rotation publishes the new key this long before signing with it. */
const JWKS_MAX_AGE_SECONDS = 300;

/**
 * `GET /.well-known/jwks.json`: the public keys `identity` servers verify the
 * gateway's assertions with. 404 when no signing key is configured; a key
 * that is set but unusable is `misconfigured`, naming the setting.
 */
export async function handleJwks(c: Context<EdgeContext>): Promise<Response> {
	let document: Awaited<ReturnType<typeof jwksDocument>>;
	try {
		document = await jwksDocument(c.env);
	} catch (error) {
		if (!(error instanceof SigningKeyMisconfigured)) throw error;
		console.error(`identity signing: misconfigured: ${error.message}`);
		throw new GatewayError(
			"misconfigured",
			`The gateway's identity signing key is misconfigured (${error.setting}); the operator's logs say why.`,
		);
	}
	if (document === null) {
		throw new GatewayError(
			"not_found",
			"Not Found: this gateway has no identity signing key, so it publishes no JWKS.",
		);
	}
	return c.json(document, 200, { "cache-control": `public, max-age=${JWKS_MAX_AGE_SECONDS}` });
}
