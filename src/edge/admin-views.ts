import type { AccessRuleRecord } from "../registry/access-rules.ts";
import type { GuardRecord } from "../registry/guard-records.ts";
import type { PolicyRecord } from "../registry/policy-records.ts";
import type { ServerRecord, VirtualServerRecord } from "../registry/schemas.ts";
import { maskedUrl } from "../upstream/upstream-target.ts";

/**
 * A header value that is only secret references, after at most an auth scheme
 * (`Bearer ${UPSTREAM_TOKEN}`): it names secrets without holding one, so it is
 * shown as it is, and `mcpgw export` can write back what was configured.
 */
const REFERENCES_ONLY = /^(?:[A-Za-z][A-Za-z0-9-]* )?(?:\$\{UPSTREAM_[A-Z0-9_]+\})+$/;

/**
 * What the admin API shows of a server: URL query values and header values
 * masked, since they may hold credentials, except header values that are only
 * `${UPSTREAM_…}` references. A server reached through connectors shows
 * `connector: {}` and no URL: its connector address is the gateway's own; one
 * made from a document shows where the document came from (`openapi`), its
 * credentials masked as headers are, and no URL either.
 */
export function maskServer(server: ServerRecord) {
	return {
		name: server.name,
		...addressView(server),
		headers: maskedValues(server.headers),
		timeoutSeconds: server.timeoutSeconds,
		protocol: server.protocol,
		// Whose credentials its requests carry; a client secret is only ever a ${UPSTREAM_…} reference.
		auth: server.auth,
		tools: server.tools,
		prompts: server.prompts,
		resources: server.resources,
		pinning: server.pinning,
		captureArguments: server.captureArguments,
		generation: server.generation,
		createdAt: new Date(server.createdAt).toISOString(),
		updatedAt: new Date(server.updatedAt).toISOString(),
	};
}

/** Header and credential values, each shown only when it names secrets without holding one. */
function maskedValues(values: Record<string, string>): Record<string, string> {
	return Object.fromEntries(
		Object.entries(values).map(([name, value]) => [name, REFERENCES_ONLY.test(value) ? value : "***"]),
	);
}

/** Where a server's requests go, as the operator gave it. */
function addressView(server: ServerRecord) {
	if (server.connector) return { connector: server.connector };
	if (server.openapi) {
		const { url, baseUrl, credentials, tools } = server.openapi;
		return {
			openapi: {
				...(url === null ? { document: "inline" } : { url: maskedUrl(url) }),
				...(baseUrl === null ? {} : { baseUrl: maskedUrl(baseUrl) }),
				credentials: maskedValues(credentials),
				tools,
			},
		};
	}
	return { url: maskedUrl(server.url) };
}

/** What the admin API shows of an access rule: all of it, with times as ISO strings. */
export function showAccessRule(rule: AccessRuleRecord) {
	return {
		...rule,
		createdAt: new Date(rule.createdAt).toISOString(),
		updatedAt: new Date(rule.updatedAt).toISOString(),
	};
}

/** What the admin API shows of a virtual server: all of it, with times as ISO strings. */
export function showVirtualServer(virtualServer: VirtualServerRecord) {
	return {
		name: virtualServer.name,
		servers: virtualServer.servers,
		userPaths: virtualServer.userPaths,
		tools: virtualServer.tools,
		prompts: virtualServer.prompts,
		resources: virtualServer.resources,
		disclosure: virtualServer.disclosure,
		alwaysList: virtualServer.alwaysList,
		generation: virtualServer.generation,
		createdAt: new Date(virtualServer.createdAt).toISOString(),
		updatedAt: new Date(virtualServer.updatedAt).toISOString(),
	};
}

/** What the admin API shows of a policy: all of it, with times as ISO strings. */
export function showPolicy(policy: PolicyRecord) {
	return {
		...policy,
		createdAt: new Date(policy.createdAt).toISOString(),
		updatedAt: new Date(policy.updatedAt).toISOString(),
	};
}

/** What the admin API shows of a content guard: all of it, with times as ISO strings. */
export function showGuard(guard: GuardRecord) {
	return {
		...guard,
		createdAt: new Date(guard.createdAt).toISOString(),
		updatedAt: new Date(guard.updatedAt).toISOString(),
	};
}
