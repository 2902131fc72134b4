import type { Env } from "../env.ts";
import { registryStub } from "../registry/registry-stub.ts";
import type { SessionCheckInput, SessionCheckResult } from "../registry/schemas.ts";

/** What a SessionDO asks of the registry. Tests swap in counting and gated versions. */
export interface RegistryClient {
	checkSession(input: SessionCheckInput): Promise<SessionCheckResult>;
}

/** The registry Durable Object, over RPC. */
export function registryClient(env: Env): RegistryClient {
	return { checkSession: (input) => registryStub(env).checkSession(input) };
}
