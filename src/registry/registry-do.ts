import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env.ts";
import { closestName } from "../primitives/closest-name.ts";
import type { AccessRuleInput } from "./access-rules.ts";
import type { ApprovalRecord, ApprovalStatus } from "./approval-records.ts";
import type { GuardInput } from "./guard-records.ts";
import { KvPublisher } from "./kv-publisher.ts";
import { publishedNames, publishedValue } from "./kv-records.ts";
import type { PolicyInput } from "./policy-records.ts";
import { AccessRulesResource } from "./resources/access-rules.ts";
import { ApprovalsResource } from "./resources/approvals.ts";
import { ConnectionsResource } from "./resources/connections.ts";
import { ConnectorTokensResource } from "./resources/connector-tokens.ts";
import { EndpointsResource } from "./resources/endpoints.ts";
import { GuardsResource } from "./resources/guards.ts";
import { KeysResource } from "./resources/keys.ts";
import { PinsResource } from "./resources/pins.ts";
import { PoliciesResource } from "./resources/policies.ts";
import { type CompiledDocument, ServersResource } from "./resources/servers.ts";
import { VirtualServersResource } from "./resources/virtual-servers.ts";
import type { ConnectionRecord, KeyInput, ServerInput, SessionCheckInput, VirtualServerInput } from "./schemas.ts";
import { migrateTables } from "./tables/migrations.ts";
import { type NamedKind, openRegistryTables, type RegistryTables } from "./tables/registry-tables.ts";
import type { PinInput } from "./tool-pins.ts";

/** The registry is one Durable Object instance under this name. */
export const REGISTRY_NAME = "registry";

/**
 * The registry of record: upstream servers, virtual servers, API keys, access
 * rules, policies, pins, connections and connector tokens, in SQLite, strongly consistent. Only
 * admin writes reach it: each commits here and is then written through to
 * Workers KV (`KvPublisher`), which is what the edge and the sessions read
 * (invariant "The registry is off the hot path").
 *
 * Its RPC methods are grouped by resource, each one line handing the call to
 * that resource's class in `resources/` (decision 0070: flat methods, so each
 * call stays one DO request under the name its callers use). The reads the
 * gateway makes (every one but `storedKey`, which only tests call) and
 * `recordObserved` (sessions call it; it writes only when a list changed)
 * count themselves in `reads`.
 */
export class RegistryDO extends DurableObject<Env> {
	/** Requests served, for cost assertions in tests and benchmarks. */
	reads = 0;
	readonly publisher: KvPublisher;
	private readonly tables: RegistryTables;
	private readonly servers: ServersResource;
	private readonly pins: PinsResource;
	private readonly virtualServers: VirtualServersResource;
	private readonly endpoints: EndpointsResource;
	private readonly keys: KeysResource;
	private readonly accessRules: AccessRulesResource;
	private readonly policies: PoliciesResource;
	private readonly guards: GuardsResource;
	private readonly connectionRecords: ConnectionsResource;
	private readonly connectorTokens: ConnectorTokensResource;
	private readonly approvals: ApprovalsResource;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		const tables = openRegistryTables(ctx.storage.sql);
		this.tables = tables;
		this.publisher = new KvPublisher(
			tables,
			ctx.storage,
			env.REGISTRY_KV,
			(name) => publishedValue(tables, name),
			() => publishedNames(tables),
		);
		this.servers = new ServersResource(tables, this.publisher);
		this.pins = new PinsResource(tables, this.publisher);
		this.virtualServers = new VirtualServersResource(tables, this.publisher);
		this.endpoints = new EndpointsResource(tables);
		this.keys = new KeysResource(tables, this.publisher, env);
		this.accessRules = new AccessRulesResource(tables, this.publisher);
		this.policies = new PoliciesResource(tables, this.publisher);
		this.guards = new GuardsResource(tables, this.publisher);
		this.connectionRecords = new ConnectionsResource(tables);
		this.connectorTokens = new ConnectorTokensResource(tables, this.publisher);
		this.approvals = new ApprovalsResource(ctx.storage);
		void ctx.blockConcurrencyWhile(async () => {
			await migrateTables(ctx.storage.sql);
			// The first start of this version (or of a new record format) publishes everything.
			if (this.publisher.formatOutdated()) this.publisher.markAll();
			if (this.publisher.pending() > 0) await ctx.storage.setAlarm(Date.now());
		});
	}

	/** Publishing retries (and the first start's full publish) run here. */
	override async alarm(): Promise<void> {
		await this.publisher.publish();
	}

	// Approvals (resources/approvals.ts): sessions say what waits and how it ended; the admin lists and decides

	approvalHeld(record: ApprovalRecord) {
		return this.approvals.held(record);
	}

	approval(id: string) {
		return this.approvals.get(id);
	}

	approvalEnded(id: string, status: Exclude<ApprovalStatus, "waiting">, decidedBy?: string) {
		return this.approvals.ended(id, status, decidedBy);
	}

	waitingApprovals(now: number) {
		return this.approvals.waiting(now);
	}

	// Operations

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

	/** The existing name of `kind` closest to `name`, for a "did you mean" when nothing is named so. */
	nameLike(kind: NamedKind, name: string) {
		this.reads++;
		return closestName(name, this.tables[kind].names()) ?? null;
	}

	// Servers (resources/servers.ts)

	putServer(name: string, input: ServerInput, compiled: CompiledDocument | null = null) {
		return this.servers.put(name, input, compiled);
	}

	/** A document server's compiled API as published: what a reader falls back to while KV is behind. */
	openApi(name: string) {
		this.reads++;
		return this.tables.openApiApis.published(name);
	}

	/** A document server's document as given inline (for export); null when it was fetched from its URL. */
	openApiDocument(name: string) {
		this.reads++;
		return this.tables.openApiApis.document(name);
	}

	getServer(name: string) {
		this.reads++;
		return this.servers.get(name);
	}

	listServers() {
		this.reads++;
		return this.servers.list();
	}

	deleteServer(name: string) {
		return this.servers.delete(name);
	}

	// A server's pinned and observed tools (resources/pins.ts)

	serverPins(name: string) {
		this.reads++;
		return this.pins.of(name);
	}

	recordFirstSeen(server: string, generation: string, pins: readonly PinInput[]) {
		return this.pins.recordFirstSeen(server, generation, pins);
	}

	recordObserved(server: string, generation: string, pins: readonly PinInput[]) {
		this.reads++;
		return this.pins.recordObserved(server, generation, pins);
	}

	observedTools(name: string) {
		this.reads++;
		return this.pins.observed(name);
	}

	approveTools(server: string, generation: string, pins: readonly PinInput[], forget: readonly string[]) {
		return this.pins.approve(server, generation, pins, forget);
	}

	// Virtual servers (resources/virtual-servers.ts)

	putVirtualServer(name: string, input: VirtualServerInput) {
		return this.virtualServers.put(name, input);
	}

	getVirtualServer(name: string) {
		this.reads++;
		return this.virtualServers.get(name);
	}

	listVirtualServers() {
		this.reads++;
		return this.virtualServers.list();
	}

	deleteVirtualServer(name: string) {
		return this.virtualServers.delete(name);
	}

	// Endpoints and sessions on them (resources/endpoints.ts)

	resolveEndpoint(name: string) {
		this.reads++;
		return this.endpoints.resolve(name);
	}

	checkSession(input: SessionCheckInput) {
		this.reads++;
		return this.endpoints.checkSession(input);
	}

	// API keys (resources/keys.ts)

	createKey(input: KeyInput) {
		return this.keys.create(input);
	}

	listKeys() {
		this.reads++;
		return this.keys.list();
	}

	revokeKey(id: string) {
		return this.keys.revoke(id);
	}

	storedKey(id: string) {
		return this.keys.stored(id);
	}

	// Access rules (resources/access-rules.ts)

	putAccessRule(name: string, input: AccessRuleInput) {
		return this.accessRules.put(name, input);
	}

	listAccessRules() {
		this.reads++;
		return this.accessRules.list();
	}

	deleteAccessRule(name: string) {
		return this.accessRules.delete(name);
	}

	// Tool policies (resources/policies.ts)

	putPolicy(name: string, input: PolicyInput) {
		return this.policies.put(name, input);
	}

	getPolicy(name: string) {
		this.reads++;
		return this.policies.get(name);
	}

	listPolicies() {
		this.reads++;
		return this.policies.list();
	}

	deletePolicy(name: string) {
		return this.policies.delete(name);
	}

	// Content guards (resources/guards.ts)

	putGuard(name: string, input: GuardInput) {
		return this.guards.put(name, input);
	}

	getGuard(name: string) {
		this.reads++;
		return this.guards.get(name);
	}

	listGuards() {
		this.reads++;
		return this.guards.list();
	}

	deleteGuard(name: string) {
		return this.guards.delete(name);
	}

	// People's connections to oauth servers (resources/connections.ts)

	recordConnection(connection: Omit<ConnectionRecord, "id">) {
		return this.connectionRecords.record(connection);
	}

	forgetConnection(server: string, vault: string) {
		return this.connectionRecords.forget(server, vault);
	}

	connections(query: { server?: string; vault?: string; rule?: string }) {
		this.reads++;
		return this.connectionRecords.list(query);
	}

	// Connector tokens of connector servers (resources/connector-tokens.ts)

	makeConnectorToken(server: string) {
		return this.connectorTokens.make(server);
	}

	listConnectorTokens(server: string) {
		this.reads++;
		return this.connectorTokens.list(server);
	}

	revokeConnectorToken(server: string, id: string) {
		return this.connectorTokens.revoke(server, id);
	}

	/** Called by a server's ConnectorDO once per connection: when its token was last seen. */
	connectorTokenSeen(id: string, at: number) {
		return this.connectorTokens.seen(id, at);
	}
}
