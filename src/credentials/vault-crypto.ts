import { base64url, sha256Hex } from "../primitives/crypto.ts";

/**
 * Sealing of what a vault object stores (tokens, PKCE verifiers, registered
 * clients' secrets): AES-256-GCM under a key derived from the Worker secret
 * `TOKEN_VAULT_KEY` with HKDF-SHA-256. Each sealed value names the key it was
 * sealed under (the first 8 hex digits of the secret's SHA-256), so the
 * secret can rotate: with the old one as `TOKEN_VAULT_KEY_PREVIOUS`, values
 * sealed under it still open, and every write seals under the current one.
 * The associated data binds a value to where it is stored (vault object,
 * table, row): a ciphertext copied into another person's row does not open.
 */

/** The shortest secret accepted: 32 characters, as for the gateway's other secrets. */
export const VAULT_KEY_MIN_LENGTH = 32;

/** The project's fixed HKDF salt and info: a key derived here serves no other purpose. */
const HKDF_SALT = "mcp-edge-gateway token vault v1";
const HKDF_INFO = "AES-256-GCM sealing of upstream credentials";
/** AES-GCM's standard 96-bit nonce, random per value (2^32 values per key stay far below the collision bound). */
const IV_BYTES = 12;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The settings the vault's keys come from. */
export type VaultKeySetting = "TOKEN_VAULT_KEY" | "TOKEN_VAULT_KEY_PREVIOUS";

/** The vault's secrets as the Worker holds them (unparsed). */
export interface VaultSecrets {
	current: string | undefined;
	previous: string | undefined;
}

/**
 * The vault cannot seal or open: its key is missing or too short. The
 * sentence names the setting, for the operator; the lead's seam answers
 * `misconfigured` with it.
 */
export class VaultKeyMisconfigured extends Error {
	constructor(readonly setting: VaultKeySetting) {
		super(
			setting === "TOKEN_VAULT_KEY"
				? `The TOKEN_VAULT_KEY secret is not set or shorter than ${VAULT_KEY_MIN_LENGTH} characters: people's upstream connections cannot be kept.`
				: `The TOKEN_VAULT_KEY_PREVIOUS secret is shorter than ${VAULT_KEY_MIN_LENGTH} characters: remove it, or set it to the previous TOKEN_VAULT_KEY.`,
		);
		this.name = "VaultKeyMisconfigured";
	}
}

/** A sealed value could not be opened: sealed under a key this gateway no longer holds, stored elsewhere, or altered. */
export class SealUnopenable extends Error {
	constructor(readonly reason: "unknown-key" | "rejected") {
		super(
			reason === "unknown-key"
				? "a vault value was sealed under a key that is neither TOKEN_VAULT_KEY nor TOKEN_VAULT_KEY_PREVIOUS"
				: "a vault value did not open: it was altered or belongs to another row",
		);
		this.name = "SealUnopenable";
	}
}

/** A sealed value: the key it was sealed under, and `<iv>.<ciphertext+tag>` in base64url. */
export interface Sealed {
	keyId: string;
	box: string;
}

/** The vault's secrets from the Worker's env (a non-string counts as not set). */
export function vaultSecretsFrom(env: Record<string, unknown>): VaultSecrets {
	const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
	return { current: text(env.TOKEN_VAULT_KEY), previous: text(env.TOKEN_VAULT_KEY_PREVIOUS) };
}

/**
 * The setting that keeps the vault from working, or null: a check without
 * crypto, for the edge to refuse `oauth` servers with `misconfigured` before
 * waking a vault object.
 */
export function vaultKeyProblem(secrets: VaultSecrets): VaultKeyMisconfigured | null {
	if (secrets.current === undefined || secrets.current.length < VAULT_KEY_MIN_LENGTH)
		return new VaultKeyMisconfigured("TOKEN_VAULT_KEY");
	if (secrets.previous !== undefined && secrets.previous.length < VAULT_KEY_MIN_LENGTH)
		return new VaultKeyMisconfigured("TOKEN_VAULT_KEY_PREVIOUS");
	return null;
}

interface VaultKey {
	id: string;
	key: CryptoKey;
}

/** Keys derived in this isolate, by secret: HKDF and the import run once per secret, not per value. */
const derived = new Map<string, Promise<VaultKey>>();

function vaultKey(secret: string): Promise<VaultKey> {
	let key = derived.get(secret);
	if (!key) {
		key = deriveVaultKey(secret);
		// A failed derivation is not kept: the next use tries again.
		key.catch(() => derived.delete(secret));
		derived.set(secret, key);
	}
	return key;
}

async function deriveVaultKey(secret: string): Promise<VaultKey> {
	const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"]);
	const key = await crypto.subtle.deriveKey(
		{ name: "HKDF", hash: "SHA-256", salt: encoder.encode(HKDF_SALT), info: encoder.encode(HKDF_INFO) },
		material,
		{ name: "AES-GCM", length: 256 },
		false,
		["encrypt", "decrypt"],
	);
	return { id: (await sha256Hex(secret)).slice(0, 8), key };
}

/**
 * The associated data of a value: where it is stored. JSON of the parts, so
 * no two places share one (no separator a name could contain).
 */
export function sealContext(vault: string, table: string, row: string): string {
	return JSON.stringify([vault, table, row]);
}

/** Seals and opens values under the vault's current key (and opens under the previous one). */
export class VaultSealer {
	private constructor(
		private readonly current: VaultKey,
		private readonly previous: VaultKey | null,
	) {}

	/** The sealer of these secrets; throws `VaultKeyMisconfigured` when they cannot serve. */
	static async of(secrets: VaultSecrets): Promise<VaultSealer> {
		const problem = vaultKeyProblem(secrets);
		if (problem) throw problem;
		const current = await vaultKey(secrets.current ?? "");
		const previous = secrets.previous === undefined ? null : await vaultKey(secrets.previous);
		return new VaultSealer(current, previous);
	}

	/** The id of the key new values are sealed under. */
	get keyId(): string {
		return this.current.id;
	}

	async seal(plaintext: string, context: string): Promise<Sealed> {
		const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
		const ciphertext = await crypto.subtle.encrypt(
			{ name: "AES-GCM", iv, additionalData: encoder.encode(context) },
			this.current.key,
			encoder.encode(plaintext),
		);
		return { keyId: this.current.id, box: `${base64url(iv)}.${base64url(new Uint8Array(ciphertext))}` };
	}

	/** The plaintext of `sealed` stored at `context`; throws `SealUnopenable` when it does not open. */
	async open(sealed: Sealed, context: string): Promise<string> {
		const [ivText, dataText, ...rest] = sealed.box.split(".");
		const iv = ivText === undefined ? null : fromBase64url(ivText);
		const data = dataText === undefined ? null : fromBase64url(dataText);
		if (!iv || !data || rest.length > 0 || iv.length !== IV_BYTES) throw new SealUnopenable("rejected");
		const candidates = [this.current, this.previous].filter((key) => key !== null && key.id === sealed.keyId);
		if (candidates.length === 0) throw new SealUnopenable("unknown-key");
		for (const candidate of candidates) {
			if (!candidate) continue;
			try {
				const plaintext = await crypto.subtle.decrypt(
					{ name: "AES-GCM", iv, additionalData: encoder.encode(context) },
					candidate.key,
					data,
				);
				return decoder.decode(plaintext);
			} catch (error) {
				// AES-GCM's tag check failing is the one expected failure: try the other key of that id, if any.
				if (!(error instanceof DOMException && error.name === "OperationError")) throw error;
			}
		}
		throw new SealUnopenable("rejected");
	}
}

/** Canonical base64url (no padding) → bytes; null for anything else. */
function fromBase64url(text: string): Uint8Array<ArrayBuffer> | null {
	if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return null;
	const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"));
	return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
