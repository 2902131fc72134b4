import type { Identity } from "./identity.ts";
// Placeholder until the external issuer module lands.
export class TokenRejected extends Error {
	constructor(readonly reason: string) {
		super(reason);
	}
}
export class IssuerUnavailable extends Error {}
export async function verifyExternalToken(
	_token: string,
	_issuer: { issuer: string; audience: string; jwksUrl: string | null },
): Promise<Identity> {
	throw new TokenRejected("not implemented");
}
