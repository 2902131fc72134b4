import { parsePrincipalId, principalRecord } from "../access-rules.ts";
import type { ResolvedEndpoint, SessionCheckInput, SessionCheckResult } from "../schemas.ts";
import { checkSessionAgainst } from "../session-check.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";

/** The RegistryDO's endpoints: what `/mcp/:name` is, and whether a session on one may go on. */
export class EndpointsResource {
	constructor(private readonly tables: RegistryTables) {}

	/** What `/mcp/:name` refers to, with a virtual server's existing members, in one read. */
	resolve(name: string): ResolvedEndpoint | null {
		return this.tables.endpoints.resolve(name);
	}

	/**
	 * Whether a live session may go on, from the registry of record (tests and
	 * operators; sessions check the same way against KV, `checkSessionWith`).
	 */
	checkSession(input: SessionCheckInput): SessionCheckResult {
		const key = parsePrincipalId(input.keyId)
			? principalRecord(input.keyId, this.tables.accessRules.list())
			: this.tables.keys.get(input.keyId);
		const endpoint = input.endpoint.kind === "aggregate" ? null : this.tables.endpoints.resolve(input.endpoint.name);
		const members = this.tables.servers.named((input.members ?? []).map((member) => member.name));
		return checkSessionAgainst(
			{
				key,
				endpoint,
				servers: new Map(members.map((server) => [server.name, server])),
			},
			input,
		);
	}
}
