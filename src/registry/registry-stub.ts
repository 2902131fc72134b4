import type { Env } from "../env.ts";
import { REGISTRY_NAME, type RegistryDO } from "./registry-do.ts";

/** The one registry instance, for the edge (admin API, keys, endpoints) and the sessions (rechecks). */
export function registryStub(env: Env): DurableObjectStub<RegistryDO> {
	return env.REGISTRY.get(env.REGISTRY.idFromName(REGISTRY_NAME));
}
