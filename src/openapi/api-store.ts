import type { Env } from "../env.ts";
import { ExpiringMap } from "../primitives/expiring-map.ts";
import { KV_NAMES } from "../registry/kv-records.ts";
import { registryStub } from "../registry/registry-stub.ts";
import { type PublishedApi, PublishedApiSchema } from "../registry/tables/openapi-apis-table.ts";

/**
 * The compiled APIs an isolate answers document servers from. An address
 * names its API's digest, so what is kept under a server and digest is never
 * stale: it is kept for as long as the isolate has room, and a changed
 * document is a new address. A miss reads KV `openapi/<server>` once; when KV
 * is behind the registry (it holds another digest, or nothing yet), the
 * registry of record answers.
 */

/** Compiled APIs are at most 1 MiB each; a few dozen servers' worth is what an isolate keeps. */
const MAX_APIS = 32;
/** Content-addressed, so never stale; the bound only lets an unused one go. */
const KEPT_MS = 60 * 60 * 1000;

const apis = new ExpiringMap<PublishedApi | null>({ maxEntries: MAX_APIS });

/**
 * The compiled API `server` has under `digest`; null when neither KV nor the
 * registry has it (the server was deleted or changed since the address was
 * read). `flight` is the request the load is made for (expiring-map.ts).
 */
export function publishedApi(env: Env, server: string, digest: string, flight: object): Promise<PublishedApi | null> {
	return apis.load(
		`${server}/${digest}`,
		() => readApi(env, server, digest),
		(found) => (found ? KEPT_MS : 0),
		flight,
	);
}

async function readApi(env: Env, server: string, digest: string): Promise<PublishedApi | null> {
	const stored = await env.REGISTRY_KV.get(KV_NAMES.openApi(server), "json");
	const parsed = stored === null ? null : PublishedApiSchema.safeParse(stored);
	if (parsed?.success && parsed.data.digest === digest) return parsed.data;
	if (parsed && !parsed.success)
		console.error(`openapi ${server}: its published API does not parse; asking the registry`);
	// Parsed again: the RPC types the compiled schemas' free-form parts away.
	const current = PublishedApiSchema.nullable().parse(await registryStub(env).openApi(server));
	return current?.digest === digest ? current : null;
}
