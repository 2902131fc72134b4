/**
 * Workers' WebCrypto in Node, for the per-stage microbenchmark: the
 * constant-time compare Workers add to `crypto.subtle`, and a synchronous
 * WebCrypto that computes in the calling thread as workerd does (Node runs
 * WebCrypto on libuv's thread pool).
 */

import { createHash, createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto";

function bytesOf(data: ArrayBuffer | ArrayBufferView): Uint8Array {
	return data instanceof ArrayBuffer
		? new Uint8Array(data)
		: new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** Workers' constant-time compare (src/primitives/crypto.ts uses it); Node has it in node:crypto only. */
export function installTimingSafeEqual(): void {
	const subtle = crypto.subtle as SubtleCrypto & { timingSafeEqual?: unknown };
	if (typeof subtle.timingSafeEqual === "function") return;
	Object.defineProperty(subtle, "timingSafeEqual", {
		value: (a: ArrayBuffer | ArrayBufferView, b: ArrayBuffer | ArrayBufferView) =>
			timingSafeEqual(bytesOf(a), bytesOf(b)),
		configurable: true,
	});
}

/** Keys made by the synchronous importKey, and their secret. */
const syncKeys = new WeakMap<object, KeyObject>();

function sha256Only(algorithm: unknown): void {
	const name = typeof algorithm === "string" ? algorithm : (algorithm as { name?: unknown } | null)?.name;
	if (name !== "SHA-256") throw new Error(`bench-stages: the synchronous WebCrypto has no ${String(name)}`);
}

/**
 * WebCrypto as workerd runs it: computed in the calling thread, the promise
 * already resolved. Only what src/ uses: SHA-256 digests, raw HMAC-SHA256 keys
 * and their signatures.
 */
const SYNC_SUBTLE = {
	digest(algorithm: unknown, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer> {
		sha256Only(algorithm);
		return Promise.resolve(Uint8Array.from(createHash("sha256").update(bytesOf(data)).digest()).buffer);
	},
	importKey(format: string, keyData: ArrayBuffer | ArrayBufferView, algorithm: { name?: string; hash?: unknown }) {
		if (format !== "raw" || algorithm.name !== "HMAC") {
			throw new Error(`bench-stages: the synchronous WebCrypto imports raw HMAC keys only`);
		}
		sha256Only(algorithm.hash);
		const key = { type: "secret", algorithm: { name: "HMAC", hash: { name: "SHA-256" } } };
		syncKeys.set(key, createSecretKey(bytesOf(keyData)));
		return Promise.resolve(key);
	},
	sign(_algorithm: unknown, key: object, data: ArrayBuffer | ArrayBufferView): Promise<ArrayBuffer> {
		const secret = syncKeys.get(key);
		if (!secret) throw new Error("bench-stages: a key of Node's WebCrypto reached the synchronous one");
		return Promise.resolve(Uint8Array.from(createHmac("sha256", secret).update(bytesOf(data)).digest()).buffer);
	},
};

/** Runs `action` with the synchronous WebCrypto in place of Node's. */
export async function withSyncWebCrypto<T>(action: () => Promise<T>): Promise<T> {
	for (const [name, value] of Object.entries(SYNC_SUBTLE)) {
		Object.defineProperty(crypto.subtle, name, { value, configurable: true, writable: true });
	}
	try {
		return await action();
	} finally {
		for (const name of Object.keys(SYNC_SUBTLE)) Reflect.deleteProperty(crypto.subtle, name);
	}
}
