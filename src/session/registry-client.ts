import type { Env } from "../env.ts";
import { grantExists } from "../registry/grants.ts";
import { type CountingReader, checkSessionWith } from "../registry/registry-reader.ts";
import type { SessionCheckInput, SessionCheckResult } from "../registry/schemas.ts";

/** What a SessionDO asks of the registry. Tests swap in counting, gated, failing or stale versions. */
export interface RegistryClient {
	checkSession(input: SessionCheckInput): Promise<SessionCheckResult>;
	/** Workers KV reads the session made so far, rechecks, policies and pins (cost reports). */
	readonly kvReads: number;
}

/**
 * Rechecks from the registry's read path, Workers KV: no request reaches the
 * RegistryDO. A signed-in principal's grant is looked up in the authorization
 * server's KV, so a revoked sign-in ends its sessions at their next recheck.
 */
export function registryClient(env: Env, reader: CountingReader): RegistryClient {
	const oauthKv = env.OAUTH_KV;
	const grants = oauthKv ? (userId: string, grantId: string) => grantExists(oauthKv, userId, grantId) : undefined;
	return {
		checkSession: (input) => checkSessionWith(reader, input, grants),
		get kvReads() {
			return reader.reads;
		},
	};
}
