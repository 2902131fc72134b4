import { z } from "zod";
import { sha256Hex } from "../primitives/crypto.ts";
import { openJson, signJson } from "../primitives/signed-json.ts";
import { IdentitySchema } from "../registry/access-rules.ts";
import { cookie, cookieValue } from "./browser-sign-in.ts";

/**
 * Who signed in, carried from the provider's callback (where the consent page
 * is shown) to the consent form's post, which is where the grant is made.
 * The library keeps the authorization request behind the consent handle; the
 * person rides beside it in a cookie signed with the gateway's session secret
 * and bound to that one handle (its digest is inside), so it cannot be
 * replayed with another consent page, another browser's handle, or after ten
 * minutes. One cookie per handle, named by its digest, so two tabs can
 * authorize at once; the post clears it.
 */
const CONSENT_PERSON_LABEL = "mcp-edge-gateway consent person";
const CONSENT_PERSON_PREFIX = "gw_consent_";
/** As long as the library's consent handle lives. */
const CONSENT_PERSON_TTL_MS = 10 * 60_000;

const ConsentPersonSchema = z.object({
	identity: IdentitySchema,
	/** The provider's `name` claim, for the page only; never matched on. */
	displayName: z.string().nullable(),
	handle: z.string(),
	expiresAt: z.number(),
});
export type SignedInForConsent = Pick<z.infer<typeof ConsentPersonSchema>, "identity" | "displayName">;

async function digestOf(handle: string): Promise<string> {
	return sha256Hex(`consent handle\n${handle}`);
}

function cookieName(digest: string): string {
	return `${CONSENT_PERSON_PREFIX}${digest.slice(0, 16)}`;
}

/** The `Set-Cookie` line that keeps `person` for the consent form of `handle`. */
export async function keepForConsent(
	secret: string,
	origin: string,
	handle: string,
	person: SignedInForConsent,
): Promise<string> {
	const digest = await digestOf(handle);
	const value = { ...person, handle: digest, expiresAt: Date.now() + CONSENT_PERSON_TTL_MS };
	return cookie(cookieName(digest), await signJson(secret, CONSENT_PERSON_LABEL, value), origin, CONSENT_PERSON_TTL_MS);
}

/**
 * The person this browser signed in as for the consent form of `handle`,
 * with the `Set-Cookie` line that clears it; `person` is null for a cookie
 * missing, forged, expired or made for another handle.
 */
export async function takeForConsent(
	request: Request,
	secret: string,
	origin: string,
	handle: string,
): Promise<{ person: SignedInForConsent | null; clear: string }> {
	const digest = await digestOf(handle);
	const name = cookieName(digest);
	const kept = await openJson(secret, CONSENT_PERSON_LABEL, cookieValue(request, name), ConsentPersonSchema);
	const valid = kept !== null && kept.handle === digest && kept.expiresAt > Date.now();
	return {
		person: valid ? { identity: kept.identity, displayName: kept.displayName } : null,
		clear: cookie(name, "", origin, 0),
	};
}
