import { describeError, GatewayError } from "../mcp/gateway-error.ts";
import type { AccessRuleRecord } from "./access-rules.ts";
import type { GuardRecord } from "./guard-records.ts";
import type { StoredKey } from "./kv-records.ts";
import type { PolicyRecord } from "./policy-records.ts";
import type { RegistryReader } from "./registry-reader.ts";
import type { ResolvedEndpoint, ServerRecord } from "./schemas.ts";
import type { ServerPins } from "./tool-pins.ts";

/** The registry's read path (Workers KV) failed: a 503 that names nothing internal; the detail is logged. */
export function registryUnavailable(cause: unknown): GatewayError {
	console.error(`registry read failed: ${describeError(cause)}`);
	return new GatewayError(
		"registry_unavailable",
		"Service Unavailable: the gateway cannot read its configuration right now. Try again shortly.",
		{ cause, headers: { "retry-after": "5" } },
	);
}

/** Rejects with `registry_unavailable`, whatever the read failed with (a module-level function: no closure per read). */
function unavailable(cause: unknown): never {
	throw registryUnavailable(cause);
}

/**
 * A request's way to the registry: `reader`'s answers, and every failed read
 * (KV failing, not answering, a record that does not parse) rejected as
 * `registry_unavailable`, so no caller turns failures into the 503 itself.
 * The edge makes one per request, and it is that request's flight for the
 * isolate's caches (`ExpiringMap.load`). A class, not an object of lambdas:
 * one allocation per request, its methods shared.
 */
export class UnavailableOnFailure implements RegistryReader {
	constructor(private readonly reader: RegistryReader) {}

	key(id: string): Promise<StoredKey | null> {
		return this.reader.key(id).catch(unavailable);
	}

	endpoint(name: string): Promise<ResolvedEndpoint | null> {
		return this.reader.endpoint(name).catch(unavailable);
	}

	servers(): Promise<ServerRecord[]> {
		return this.reader.servers().catch(unavailable);
	}

	rules(): Promise<AccessRuleRecord[]> {
		return this.reader.rules().catch(unavailable);
	}

	policies(): Promise<PolicyRecord[]> {
		return this.reader.policies().catch(unavailable);
	}

	guards(): Promise<GuardRecord[]> {
		return this.reader.guards().catch(unavailable);
	}

	pins(server: string): Promise<ServerPins | null> {
		return this.reader.pins(server).catch(unavailable);
	}
}
