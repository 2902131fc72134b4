import { isolateCache } from "../primitives/expiring-map.ts";
import type { RegistryReader } from "../registry/registry-reader.ts";
import { type CompiledPolicies, compilePolicies } from "./policies.ts";

/**
 * The published policies, compiled, per isolate: read from KV at most once
 * per `ttlMs` (ENDPOINT_CACHE_TTL_SECONDS, as access rules are), single-flight,
 * and compiled once per list read. A policy change reaches this isolate's
 * lists and calls within the TTL, never at a registry read per request.
 */
const compiledPolicies = isolateCache<CompiledPolicies>({ maxEntries: 1 });

export function loadPolicies(reader: Pick<RegistryReader, "policies">, ttlMs: number): Promise<CompiledPolicies> {
	return compiledPolicies.load(
		"policies",
		async () => compilePolicies(await reader.policies()),
		() => ttlMs,
		reader,
	);
}
