import type { Env } from "../env.ts";
import { REGISTRY_NAME } from "../registry/registry-do.ts";

/** The one registry instance. */
export function registryStub(env: Env): DurableObjectStub<import("../registry/registry-do.ts").RegistryDO> {
	return env.REGISTRY.get(env.REGISTRY.idFromName(REGISTRY_NAME));
}
