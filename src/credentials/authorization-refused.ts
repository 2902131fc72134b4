/**
 * Why connecting to, or refreshing at, an upstream's authorization server was
 * refused. Callers switch on the reason; the message is a sentence for the
 * person (the connect page shows it) and never holds a token or a secret.
 */
export const REFUSAL_REASONS = [
	/** A metadata or endpoint URL that is not https (plain http only on loopback when allowed). */
	"insecure_url",
	/** A metadata or endpoint request answered with a redirect. */
	"redirected",
	/** A reply larger than a metadata document or token response can need. */
	"oversized",
	/** The server could not be reached, or answered with an unexpected status. */
	"unreachable",
	/** Metadata that is missing, not JSON, or not what RFC 9728 / RFC 8414 describe. */
	"bad_metadata",
	/** Protected resource metadata for another resource than the server's URL. */
	"resource_mismatch",
	/** Authorization server metadata whose `issuer` is not the one the resource names. */
	"issuer_mismatch",
	/** Dynamic client registration failed or is not offered, and no other client identity fits. */
	"registration_failed",
	/** The authorization server does not know (or no longer accepts) the gateway's client. */
	"client_refused",
	/** The operator's client secret reference does not resolve. */
	"misconfigured",
	/** The callback arrived at another address than the gateway's redirect URI. */
	"callback_elsewhere",
	/** The callback's `state` is not the one this flow sent. */
	"state_mismatch",
	/** RFC 9207: the callback's `iss` names another authorization server. */
	"iss_mismatch",
	/** RFC 9207: the authorization server says it sends `iss`, and the callback has none. */
	"iss_missing",
	/** The person (or the authorization server) declined: an error in the callback. */
	"authorization_denied",
	/** The token endpoint refused the code exchange. */
	"token_refused",
	/** A token issued for another resource than the upstream (RFC 8707). */
	"token_for_other_resource",
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export class UpstreamAuthorizationRefused extends Error {
	override name = "UpstreamAuthorizationRefused";
	constructor(
		readonly reason: RefusalReason,
		message: string,
		options?: { cause?: unknown },
	) {
		super(message, options);
	}
}
