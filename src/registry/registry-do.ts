import { DurableObject } from "cloudflare:workers";
import { z } from "zod";
import { settingsFrom } from "../config.ts";
import type { Env } from "../env.ts";
import { GatewayError } from "../mcp/gateway-error.ts";
import { closestName } from "../primitives/closest-name.ts";
import { randomToken, sha256Hex } from "../primitives/crypto.ts";
import { type AccessRuleInput, type AccessRuleRecord, parsePrincipalId, principalRecord } from "./access-rules.ts";
import { mintApiKey, newKeyId } from "./api-key.ts";
import { KvPublisher } from "./kv-publisher.ts";
import { KV_NAMES, publishedNames, publishedValue, type StoredKey } from "./kv-records.ts";
import { ObservedToolsTable } from "./observed-tools.ts";
import type { PolicyApplies, PolicyInput, PolicyRecord } from "./policy-records.ts";
import { quoteList } from "./quoted-names.ts";
import { configDigest, type NamedKind, RegistryTables } from "./registry-tables.ts";
import {
	type ApiKeyRecord,
	type ConnectionRecord,
	describeIssues,
	type KeyInput,
	type ResolvedEndpoint,
	type ServerInput,
	type ServerRecord,
	type SessionCheckInput,
	type SessionCheckResult,
	type VirtualServerInput,
	type VirtualServerRecord,
} from "./schemas.ts";
import { checkSessionAgainst } from "./session-check.ts";
import { type ObservedTools, type PinInput, PinInputSchema, type ServerPins } from "./tool-pins.ts";

/** At most this many tools are pinned per write: a list longer than that is an upstream flooding us. */
const MAX_PINS_PER_WRITE = 1_000;
const PinInputsSchema = z.array(PinInputSchema).max(MAX_PINS_PER_WRITE);

/** The registry is one Durable Object instance under this name. */
export const REGISTRY_NAME = "registry";

/**
 * The registry of record: upstream servers, virtual servers and API keys, in
 * SQLite, strongly consistent. Only admin writes reach it: each commits here
 * and is then written through to Workers KV (`KvPublisher`), which is what
 * the edge and the sessions read (invariant "The registry is off the hot path").
 */
export class RegistryDO extends DurableObject<Env> {
	private readonly tables: RegistryTables;
	private readonly observed: ObservedToolsTable;
	/** Requests served, for cost assertions in tests and benchmarks. */
	reads = 0;
	readonly publisher: KvPublisher;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.tables = new RegistryTables(ctx.storage.sql);
		this.observed = new ObservedToolsTable(ctx.storage.sql);
		this.publisher = new KvPublisher(
			this.tables,
			ctx.storage,
			env.REGISTRY_KV,
			(name) => publishedValue(this.tables, name),
			() => publishedNames(this.tables),
		);
		void ctx.blockConcurrencyWhile(async () => {
			await this.tables.migrate();
			// The first start of this version (or of a new record format) publishes everything.
			if (this.publisher.formatOutdated()) this.publisher.markAll();
			if (this.publisher.pending() > 0) await ctx.storage.setAlarm(Date.now());
		});
	}

	/** Publishing retries (and the first start's full publish) run here. */
	override async alarm(): Promise<void> {
		await this.publisher.publish();
	}

	/** Requests served so far (cost reports). */
	readCount(): number {
		return this.reads;
	}

	/** Publishes everything to KV again (`POST /admin/sync`); returns how many records, and how many still wait. */
	async sync(): Promise<{ records: number; pending: number }> {
		const records = this.publisher.markAll();
		await this.publisher.publish();
		return { records, pending: this.publisher.pending() };
	}

	/**
	 * Creates or replaces a server. A replacement keeps its generation; a new name gets a fresh one.
	 * Refuses a name a virtual server holds, since both are addressed as `/mcp/:name`. Nothing
	 * after the digest awaits, so no other call can run between the check and the write.
	 */
	async putServer(
		name: string,
		input: ServerInput,
	): Promise<{ server: ServerRecord; created: boolean } | { conflict: string }> {
		// Hashed before the checks: nothing below awaits, so checks and write stay atomic.
		const config = {
			url: input.url,
			headers: input.headers,
			timeoutSeconds: input.timeoutSeconds ?? null,
			protocol: input.protocol,
			auth: input.auth,
			tools: input.tools ?? null,
			prompts: input.prompts ?? null,
			resources: input.resources ?? null,
			pinning: input.pinning,
		};
		const digest = await configDigest(config);
		if (this.tables.virtualServer(name)) {
			return { conflict: `'${name}' is already the name of a virtual server; servers and virtual servers share names` };
		}
		const now = Date.now();
		const existing = this.tables.server(name);
		const server = this.tables.putServer({
			name,
			...config,
			generation: existing?.generation ?? randomToken(12),
			configDigest: digest,
			// Not part of the config digest: capturing arguments changes no upstream session.
			captureArguments: input.captureArguments,
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		await this.publish(this.namesOfServer(name));
		return { server, created: existing === null };
	}

	getServer(name: string): ServerRecord | null {
		this.reads++;
		return this.tables.server(name);
	}

	listServers(): ServerRecord[] {
		this.reads++;
		return this.tables.servers();
	}

	/** Deletes a server and its pins: a server created again under the name starts with none. */
	deleteServer(name: string): Promise<boolean> {
		const deleted = this.tables.deleteServer(name);
		if (deleted) {
			this.tables.deletePins(name);
			this.observed.delete(name);
		}
		return this.deleted(deleted, () => [...this.namesOfServer(name), KV_NAMES.pins(name)]);
	}

	/** A server's pins (`GET /admin/servers/:name/tools`); null until its tools were first recorded. */
	serverPins(name: string): ServerPins | null {
		this.reads++;
		return this.tables.serverPins(name);
	}

	/**
	 * Trust on first use, called by the gateway when it first sees a server's
	 * tools (after a tools/list): stores the digests only when the server has no
	 * pin at all, so a tool that appears later stays "new". Refused for another
	 * incarnation than the current one (a list fetched before a delete and
	 * re-create must not pin the new server). Under pinning "off" nothing is
	 * recorded. A write only when something is recorded; otherwise one read.
	 */
	async recordFirstSeen(
		server: string,
		generation: string,
		pins: readonly PinInput[],
	): Promise<{ recorded: boolean; pins: ServerPins | null } | { refused: string }> {
		const parsed = PinInputsSchema.safeParse(pins);
		if (!parsed.success) return { refused: `pins: ${describeIssues(parsed.error)}` };
		const current = this.tables.server(server);
		if (!current) return { refused: `no server named '${server}'` };
		if (current.generation !== generation) return { refused: `'${server}' is another incarnation now` };
		if (current.pinning === "off") return { recorded: false, pins: this.tables.serverPins(server) };
		const now = Date.now();
		const recorded = this.tables.recordFirstSeen(server, generation, parsed.data, now);
		if (recorded) {
			// The first list is also the first observed: the admin's view of a server it cannot list starts from it.
			this.observed.put(server, generation, parsed.data, now);
			await this.publish([KV_NAMES.pins(server)]);
		}
		return { recorded, pins: this.tables.serverPins(server) };
	}

	/**
	 * A session saw the server list a tool not as approved (new, changed, or a
	 * pinned one missing): `pins` are what it listed, kept as the server's last
	 * observed list for the admin (`GET /admin/servers/:name/tools` of a server
	 * whose requests need a caller). Written only when it differs from the list
	 * kept; refused for another incarnation. Published nowhere.
	 */
	recordObserved(
		server: string,
		generation: string,
		pins: readonly PinInput[],
	): { recorded: boolean } | { refused: string } {
		this.reads++;
		const parsed = PinInputsSchema.safeParse(pins);
		if (!parsed.success) return { refused: `pins: ${describeIssues(parsed.error)}` };
		const current = this.tables.server(server);
		if (!current) return { refused: `no server named '${server}'` };
		if (current.generation !== generation) return { refused: `'${server}' is another incarnation now` };
		if (current.pinning === "off") return { recorded: false };
		return { recorded: this.observed.put(server, generation, parsed.data, Date.now()) };
	}

	/** What sessions last saw the server list, of its current incarnation; null when none was reported. */
	observedTools(name: string): ObservedTools | null {
		this.reads++;
		const server = this.tables.server(name);
		const observed = this.observed.get(name);
		return server && observed?.generation === server.generation ? observed : null;
	}

	/**
	 * The operator approves definitions (`POST /admin/servers/:name/tools/approve`):
	 * `pins` are stored as approved (replacing those of the same names), the
	 * pins named in `forget` (tools the server no longer lists) are dropped.
	 */
	async approveTools(
		server: string,
		generation: string,
		pins: readonly PinInput[],
		forget: readonly string[],
	): Promise<{ pins: ServerPins | null; refused: string | null }> {
		const refused = (reason: string) => ({ pins: null, refused: reason });
		const parsed = PinInputsSchema.safeParse(pins);
		if (!parsed.success) return refused(`pins: ${describeIssues(parsed.error)}`);
		const current = this.tables.server(server);
		if (!current) return refused(`no server named '${server}'`);
		if (current.generation !== generation) return refused(`'${server}' was deleted and created again meanwhile`);
		this.tables.approvePins(server, generation, parsed.data, forget, Date.now());
		await this.publish([KV_NAMES.pins(server)]);
		return { pins: this.tables.serverPins(server), refused: null };
	}

	/**
	 * Creates or replaces a virtual server. A replacement keeps its generation, so live sessions
	 * survive an edit of the member list; a new name gets a fresh one. Every member must be an
	 * existing server: a typo would otherwise create an endpoint that silently lacks tools.
	 * Nothing awaits before the write, so the checks and the write are atomic.
	 */
	async putVirtualServer(
		name: string,
		input: VirtualServerInput,
	): Promise<{ virtualServer: VirtualServerRecord; created: boolean } | { conflict: string } | { invalid: string }> {
		if (this.tables.server(name)) {
			return { conflict: `'${name}' is already the name of a server; servers and virtual servers share names` };
		}
		const known = new Set(this.tables.serversNamed(input.servers).map((server) => server.name));
		const unknown = input.servers.filter((server) => !known.has(server));
		if (unknown.length > 0) {
			const virtual = unknown.filter((member) => this.tables.virtualServer(member) !== null);
			const missing = unknown.filter((member) => !virtual.includes(member));
			const problems: string[] = [];
			if (missing.length > 0) problems.push(`no server named ${quoteList(missing, this.tables.names("servers"))}`);
			if (virtual.length > 0) problems.push(`members must be servers, not virtual servers: ${quoteList(virtual)}`);
			return { invalid: `servers: ${problems.join("; ")}` };
		}
		const now = Date.now();
		const existing = this.tables.virtualServer(name);
		const virtualServer = this.tables.putVirtualServer({
			name,
			servers: input.servers,
			userPaths: input.userPaths ?? null,
			tools: input.tools ?? null,
			prompts: input.prompts ?? null,
			resources: input.resources ?? null,
			disclosure: input.disclosure,
			alwaysList: input.alwaysList,
			generation: existing?.generation ?? randomToken(12),
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		await this.publish([KV_NAMES.endpoint(name)]);
		return { virtualServer, created: existing === null };
	}

	/** The existing name of `kind` closest to `name`, for a "did you mean" when nothing is named so. */
	nameLike(kind: NamedKind, name: string): string | null {
		this.reads++;
		return closestName(name, this.tables.names(kind)) ?? null;
	}

	getVirtualServer(name: string): VirtualServerRecord | null {
		this.reads++;
		return this.tables.virtualServer(name);
	}

	listVirtualServers(): VirtualServerRecord[] {
		this.reads++;
		return this.tables.virtualServers();
	}

	deleteVirtualServer(name: string): Promise<boolean> {
		return this.deleted(this.tables.deleteVirtualServer(name), () => [KV_NAMES.endpoint(name)]);
	}

	/** What `/mcp/:name` refers to, with a virtual server's existing members, in one read. */
	resolveEndpoint(name: string): ResolvedEndpoint | null {
		this.reads++;
		return this.tables.endpoint(name);
	}

	/**
	 * Whether a live session may go on, from the registry of record (tests and
	 * operators; sessions check the same way against KV, `checkSessionWith`).
	 */
	checkSession(input: SessionCheckInput): SessionCheckResult {
		this.reads++;
		const key = parsePrincipalId(input.keyId)
			? principalRecord(input.keyId, this.tables.accessRules())
			: this.tables.key(input.keyId);
		const endpoint = input.endpoint.kind === "aggregate" ? null : this.tables.endpoint(input.endpoint.name);
		const members = this.tables.serversNamed((input.members ?? []).map((member) => member.name));
		return checkSessionAgainst(
			{
				key,
				endpoint,
				servers: new Map(members.map((server) => [server.name, server])),
			},
			input,
		);
	}

	/**
	 * Creates a key and returns its secret, which is never stored or shown again. Every name in
	 * its `servers` must be a server or a virtual server now: a typo would otherwise make a key
	 * that reaches nothing. Nothing awaits between that check and the write.
	 */
	async createKey(input: KeyInput): Promise<{ record: ApiKeyRecord; key: string } | { invalid: string }> {
		const secret = settingsFrom(this.env).keySecret;
		if (!secret) {
			throw new GatewayError(
				"misconfigured",
				"The gateway is misconfigured: the KEY_SECRET secret is not set (at least 32 characters), so no API key can be issued.",
			);
		}
		const id = newKeyId();
		const key = await mintApiKey(secret, id);
		const digest = await sha256Hex(key);
		const invalid = this.unknownGrants(input.servers);
		if (invalid) return { invalid };
		const record: ApiKeyRecord = {
			id,
			name: input.name ?? null,
			userPath: input.userPath,
			servers: input.servers ?? null,
			maxSessions: input.maxSessions ?? null,
			rateClass: input.rateClass,
			disclosure: input.disclosure,
			alwaysList: input.alwaysList,
			format: "self-verifying",
			createdAt: Date.now(),
		};
		this.tables.insertKey({ ...record, digest });
		await this.publish([KV_NAMES.key(id)]);
		return { record, key };
	}

	listKeys(): ApiKeyRecord[] {
		this.reads++;
		return this.tables.keys();
	}

	revokeKey(id: string): Promise<boolean> {
		return this.deleted(this.tables.deleteKey(id), () => [KV_NAMES.key(id)]);
	}

	/**
	 * Creates or replaces an access rule (see `writeAccessRule` for what a
	 * replacement keeps), and publishes the rules. Its `servers` are checked as
	 * a key's are; a refused rule leaves the existing one as it was.
	 */
	async putAccessRule(
		name: string,
		input: AccessRuleInput,
	): Promise<{ rule: AccessRuleRecord; created: boolean } | { invalid: string }> {
		const invalid = this.unknownGrants(input.servers);
		if (invalid) return { invalid };
		const written = this.tables.writeAccessRule(name, input, Date.now());
		await this.publish([KV_NAMES.rules]);
		return written;
	}

	listAccessRules(): AccessRuleRecord[] {
		this.reads++;
		return this.tables.accessRules();
	}

	deleteAccessRule(name: string): Promise<boolean> {
		return this.deleted(this.tables.deleteAccessRule(name), () => [KV_NAMES.rules]);
	}

	/**
	 * Creates or replaces a tool policy and publishes the policies. The
	 * expression was compiled by the caller (the admin route, with governance's
	 * compiler); here every name in `applies` must exist, since a policy whose
	 * server or key is misspelt would silently apply nowhere. A refused policy
	 * leaves the existing one as it was.
	 */
	async putPolicy(
		name: string,
		input: PolicyInput,
	): Promise<{ policy: PolicyRecord; created: boolean } | { invalid: string }> {
		const invalid = this.unknownApplies(input.applies);
		if (invalid) return { invalid };
		const written = this.tables.writePolicy(name, input, Date.now());
		await this.publish([KV_NAMES.policies]);
		return written;
	}

	getPolicy(name: string): PolicyRecord | null {
		this.reads++;
		return this.tables.policy(name);
	}

	listPolicies(): PolicyRecord[] {
		this.reads++;
		return this.tables.policies();
	}

	deletePolicy(name: string): Promise<boolean> {
		return this.deleted(this.tables.deletePolicy(name), () => [KV_NAMES.policies]);
	}

	/**
	 * A person's (or key's) connection to an `oauth` server, recorded for the
	 * operators' listing and for cutting off: written when one is made or
	 * removed, never on a call (the tokens live in the vault; this is who, not what).
	 */
	recordConnection(connection: Omit<ConnectionRecord, "id">): ConnectionRecord {
		return this.tables.putConnection({ ...connection, id: `${connection.server} ${connection.vault}` });
	}

	forgetConnection(server: string, vault: string): boolean {
		return this.tables.deleteConnection(`${server} ${vault}`);
	}

	connections(query: { server?: string; vault?: string; rule?: string }): ConnectionRecord[] {
		this.reads++;
		if (query.server !== undefined) return this.tables.connectionsTo(query.server);
		if (query.vault !== undefined) return this.tables.connectionsOf(query.vault);
		if (query.rule !== undefined) return this.tables.connectionsUnder(query.rule);
		return [];
	}

	/** A key's stored record with its digest (what is published as `key/<id>`); null if none. */
	storedKey(id: string): StoredKey | null {
		return this.tables.storedKey(id);
	}

	/**
	 * Publishes what a committed write changed: the names are marked in the
	 * same synchronous step as the write (see KvPublisher), then written through.
	 */
	private async publish(names: readonly string[]): Promise<void> {
		this.publisher.markDirty(names);
		await this.publisher.publish();
	}

	/** After a delete: publishes the names its absence changes, if there was anything to delete. */
	private async deleted(deleted: boolean, names: () => readonly string[]): Promise<boolean> {
		if (!deleted) return false;
		await this.publish(names());
		return true;
	}

	/** KV names a change of server `name` affects: its endpoint, the server list, virtual servers using it. */
	private namesOfServer(name: string): string[] {
		const virtual = this.tables.virtualServersWith(name).map((member) => KV_NAMES.endpoint(member));
		return [KV_NAMES.endpoint(name), KV_NAMES.servers, ...virtual];
	}

	/** Why a policy's `applies` names what is not there, in a sentence; null when everything it names exists. */
	private unknownApplies(applies: PolicyApplies | undefined): string | null {
		if (!applies) return null;
		// Each: the field, its words, the names it gives, which of them exist, and every name it could have meant.
		const checks: Array<
			[string, string, readonly string[] | undefined, (names: string[]) => Set<string>, () => string[]]
		> = [
			[
				"servers",
				"no server named",
				applies.servers,
				(names) => new Set(this.tables.serversNamed(names).map((server) => server.name)),
				() => this.tables.names("servers"),
			],
			[
				"virtualServers",
				"no virtual server named",
				applies.virtualServers,
				(names) => new Set(names.filter((name) => this.tables.virtualServer(name) !== null)),
				() => this.tables.names("virtualServers"),
			],
			["keys", "no API key with id", applies.keys, (ids) => this.tables.existingKeys(ids), () => this.tables.keyIds()],
			[
				"rules",
				"no access rule named",
				applies.rules,
				(names) => this.tables.existingRules(names),
				() => this.tables.names("accessRules"),
			],
		];
		const problems = checks.flatMap(([field, words, names, known, candidates]) => {
			if (!names) return [];
			const present = known([...names]);
			const unknown = [...new Set(names.filter((name) => !present.has(name)))];
			return unknown.length === 0 ? [] : [`applies.${field}: ${words} ${quoteList(unknown, candidates())}`];
		});
		return problems.length === 0 ? null : problems.join("; ");
	}

	/**
	 * Why a key's or rule's `servers` cannot be granted: the names that are neither a server nor
	 * a virtual server, in a sentence; null when every name exists (or there is no list).
	 */
	private unknownGrants(names: readonly string[] | undefined): string | null {
		if (!names || names.length === 0) return null;
		const known = this.tables.existingEndpoints(names);
		const unknown = [...new Set(names.filter((name) => !known.has(name)))];
		if (unknown.length === 0) return null;
		return `servers: no server or virtual server named ${quoteList(unknown, this.tables.endpointNames())}`;
	}
}
