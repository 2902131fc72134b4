import { type CryptoKey, importJWK, type JWK } from "jose";
import { z } from "zod";

/** The settings that hold the gateway's identity signing keys. */
export const SIGNING_KEY_SETTINGS = ["IDENTITY_SIGNING_KEY", "IDENTITY_SIGNING_KEY_PREVIOUS"] as const;
export type SigningKeySetting = (typeof SIGNING_KEY_SETTINGS)[number];

/** The only algorithm the gateway signs assertions with. */
export const ASSERTION_ALG = "ES256";

const base64urlPart = z.string().regex(/^[A-Za-z0-9_-]+$/, "must be base64url");

/** A P-256 key as a JWK, with the key id the JWKS publishes it under. */
const PublicJwkSchema = z.object({
	kty: z.literal("EC"),
	crv: z.literal("P-256"),
	x: base64urlPart,
	y: base64urlPart,
	kid: z.string().min(1).max(200),
	alg: z.literal(ASSERTION_ALG).optional(),
	use: z.literal("sig").optional(),
});
const PrivateJwkSchema = PublicJwkSchema.extend({ d: base64urlPart });

/** What an env must offer: the two settings, as strings (empty counts as unset, as in `settingsFrom`). */
export type SigningKeyEnv = Partial<Record<SigningKeySetting, unknown>>;

/** A public key as the JWKS publishes it. */
export interface PublishedKey {
	kty: "EC";
	crv: "P-256";
	x: string;
	y: string;
	kid: string;
	alg: typeof ASSERTION_ALG;
	use: "sig";
}

export interface SigningKeys {
	/** Signs every assertion. */
	current: { kid: string; privateKey: CryptoKey; published: PublishedKey };
	/** The key before a rotation: published so tokens it signed still verify, never used to sign. */
	previous: PublishedKey | null;
}

/**
 * A signing key setting that is missing or cannot be used. It names the
 * setting, never its value; the caller answers `misconfigured`.
 */
export class SigningKeyMisconfigured extends Error {
	readonly setting: SigningKeySetting;
	readonly reason: "missing" | "invalid";

	constructor(setting: SigningKeySetting, reason: "missing" | "invalid", detail: string) {
		super(`${setting} ${detail}`);
		this.name = "SigningKeyMisconfigured";
		this.setting = setting;
		this.reason = reason;
	}
}

/** Keys imported once per isolate, per env object; a changed setting (a new deploy) is imported again. */
const imported = new WeakMap<object, { raw: string; keys: Promise<SigningKeys> }>();

/** Whether the gateway has a signing key at all (no key: no JWKS, no `identity` servers). */
export function hasSigningKey(env: SigningKeyEnv): boolean {
	return settingText(env, "IDENTITY_SIGNING_KEY") !== null;
}

/**
 * The gateway's signing keys from `IDENTITY_SIGNING_KEY` (an ES256 private
 * JWK as JSON, with a `kid`) and the optional `IDENTITY_SIGNING_KEY_PREVIOUS`
 * (private or public; only its public part is ever used). Rejects with
 * `SigningKeyMisconfigured` when the first is missing or either is not such a key.
 */
export function signingKeys(env: SigningKeyEnv): Promise<SigningKeys> {
	const current = settingText(env, "IDENTITY_SIGNING_KEY");
	if (current === null) {
		return Promise.reject(new SigningKeyMisconfigured("IDENTITY_SIGNING_KEY", "missing", "is not set"));
	}
	const previous = settingText(env, "IDENTITY_SIGNING_KEY_PREVIOUS");
	const raw = `${current}\n${previous ?? ""}`;
	const known = imported.get(env);
	if (known && known.raw === raw) return known.keys;
	const keys = importKeys(current, previous);
	imported.set(env, { raw, keys });
	// A rejection stays too: the same settings would fail the same way on every request.
	return keys;
}

async function importKeys(currentText: string, previousText: string | null): Promise<SigningKeys> {
	const current = parseJwk("IDENTITY_SIGNING_KEY", currentText, PrivateJwkSchema);
	const privateKey = await importOrRefuse("IDENTITY_SIGNING_KEY", { ...current, alg: ASSERTION_ALG });
	let previous: PublishedKey | null = null;
	if (previousText !== null) {
		previous = publishedKey(parseJwk("IDENTITY_SIGNING_KEY_PREVIOUS", previousText, PublicJwkSchema));
		if (previous.kid === current.kid) {
			throw new SigningKeyMisconfigured(
				"IDENTITY_SIGNING_KEY_PREVIOUS",
				"invalid",
				"has the same kid as IDENTITY_SIGNING_KEY: a rotation needs a new kid, or verifiers cannot tell the keys apart",
			);
		}
		// Imported only to prove it is a point on the curve; verifiers would fail on it otherwise.
		await importOrRefuse("IDENTITY_SIGNING_KEY_PREVIOUS", previous);
	}
	return { current: { kid: current.kid, privateKey, published: publishedKey(current) }, previous };
}

function parseJwk<T extends z.ZodType<z.output<typeof PublicJwkSchema>>>(
	setting: SigningKeySetting,
	text: string,
	schema: T,
): z.output<T> {
	let json: unknown;
	try {
		json = JSON.parse(text);
	} catch (error) {
		if (!(error instanceof SyntaxError)) throw error;
		throw new SigningKeyMisconfigured(setting, "invalid", "is not JSON: it must be an ES256 (P-256) JWK");
	}
	const parsed = schema.safeParse(json);
	if (!parsed.success) {
		const issue = parsed.error.issues[0];
		const where = issue && issue.path.length > 0 ? ` (${issue.path.join(".")}: ${issue.message})` : "";
		throw new SigningKeyMisconfigured(setting, "invalid", `is not an ES256 (P-256) JWK with a kid${where}`);
	}
	return parsed.data;
}

async function importOrRefuse(setting: SigningKeySetting, jwk: JWK): Promise<CryptoKey> {
	try {
		const key = await importJWK(jwk, ASSERTION_ALG);
		if (key instanceof Uint8Array) throw new TypeError("a symmetric key");
		return key;
	} catch (error) {
		if (error instanceof SigningKeyMisconfigured) throw error;
		throw new SigningKeyMisconfigured(setting, "invalid", "could not be imported as an ES256 key");
	}
}

/** The public part only, whatever else the JWK held: `d` never leaves this file. */
function publishedKey(jwk: z.output<typeof PublicJwkSchema>): PublishedKey {
	return { kty: jwk.kty, crv: jwk.crv, x: jwk.x, y: jwk.y, kid: jwk.kid, alg: ASSERTION_ALG, use: "sig" };
}

function settingText(env: SigningKeyEnv, setting: SigningKeySetting): string | null {
	const value = env[setting];
	return typeof value === "string" && value.trim() !== "" ? value : null;
}
