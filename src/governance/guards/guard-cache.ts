import { isolateCache } from "../../primitives/expiring-map.ts";
import type { GuardRecord } from "../../registry/guard-records.ts";
import type { RegistryReader } from "../../registry/registry-reader.ts";

/**
 * The published guards, per isolate: read from KV at most once per `ttlMs`
 * (ENDPOINT_CACHE_TTL_SECONDS, as policies are), single-flight. With no guard
 * published the list is empty, and a call asks nothing more of it.
 */
const publishedGuards = isolateCache<readonly GuardRecord[]>({ maxEntries: 1 });

export function loadGuards(reader: Pick<RegistryReader, "guards">, ttlMs: number): Promise<readonly GuardRecord[]> {
	return publishedGuards.load(
		"guards",
		() => reader.guards(),
		() => ttlMs,
		reader,
	);
}
