import { z } from "zod";
import { ApprovalRecordSchema } from "../../registry/approval-records.ts";
import { GuardRecordSchema } from "../../registry/guard-records.ts";
import type { CallerAuth } from "../server-check.ts";
import { type AdminCaller, AdminRefused, readAdmin, segment } from "./admin-calls.ts";

/**
 * What the overview shows, read through the admin API and parsed here: the
 * fields the pages render, nothing else (the API's answers are not trusted
 * to be the shape the page expects; a change there fails here, by name).
 */

/**
 * Where a document server's tools come from, as the admin API shows it: the
 * document's URL or "inline", the base URL the operator gave, its credentials
 * by scheme (masked unless only references) and how many tools it made.
 */
const OpenApiSchema = z.object({
	url: z.string().optional(),
	document: z.literal("inline").optional(),
	baseUrl: z.string().optional(),
	credentials: z.record(z.string(), z.string()),
	tools: z.number(),
});
export type OpenApiView = z.output<typeof OpenApiSchema>;
const ServersSchema = z.object({
	servers: z.array(
		z.object({
			name: z.string(),
			// Absent for a server reached through connectors (`connector: {}`) or made from a document (`openapi`).
			url: z.string().optional(),
			openapi: OpenApiSchema.optional(),
			auth: z.object({ type: z.string() }),
			pinning: z.string(),
		}),
	),
});
export const CheckSchema = z.object({
	reachable: z.boolean(),
	speaksMcp: z.boolean(),
	era: z.string().nullable(),
	detail: z.string(),
	needsCaller: z.enum(["oauth", "identity", "token-exchange"] satisfies CallerAuth[]).optional(),
});
const ConnectorSchema = z.object({
	id: z.string(),
	tokenId: z.string(),
	since: z.number(),
	host: z.string(),
	version: z.string(),
	sessions: z.number(),
});
export type ConnectorView = z.output<typeof ConnectorSchema>;
/** A server's check; a connector server also lists its connectors online, a document server says where its document came from. */
const CheckedSchema = z.object({
	check: CheckSchema,
	connector: z.object({}).optional(),
	openapi: OpenApiSchema.optional(),
	connectors: z.array(ConnectorSchema).optional(),
});
const ConnectorTokensSchema = z.object({
	connectorTokens: z.array(z.object({ id: z.string(), createdAt: z.string(), lastSeenAt: z.string().nullable() })),
});
export type ConnectorTokenView = z.output<typeof ConnectorTokensSchema>["connectorTokens"][number];

/** What a server reached through connectors shows besides its check: its connectors online and its tokens. */
export interface ConnectorsView {
	online: ConnectorView[];
	tokens: ConnectorTokenView[] | Failed;
}
export const ToolsViewSchema = z.object({
	pinning: z.string(),
	recorded: z.boolean(),
	unlisted: z.string().optional(),
	observedAt: z.string().optional(),
	tools: z.array(
		z.object({
			name: z.string(),
			state: z.enum(["approved", "changed", "new", "removed", "pinned"]),
			changedFields: z.array(z.string()).optional(),
			approvedAt: z.string().optional(),
		}),
	),
});
export type ToolsView = z.output<typeof ToolsViewSchema>;
const VirtualServersSchema = z.object({
	virtualServers: z.array(
		z.object({ name: z.string(), servers: z.array(z.string()), userPaths: z.array(z.string()).nullish() }),
	),
});
const KeysSchema = z.object({
	keys: z.array(
		z.object({
			id: z.string(),
			name: z.string().nullish(),
			userPath: z.string(),
			servers: z.array(z.string()).nullable(),
			rateClass: z.string().nullish(),
			createdAt: z.string(),
		}),
	),
});
const AccessRulesSchema = z.object({
	accessRules: z.array(
		z.object({
			name: z.string(),
			match: z.record(z.string(), z.string()),
			servers: z.array(z.string()).nullable(),
			userPath: z.string(),
			priority: z.number(),
			admin: z.boolean(),
		}),
	),
});
const PoliciesSchema = z.object({
	policies: z.array(z.object({ name: z.string(), expression: z.string(), effect: z.string(), priority: z.number() })),
});
/**
 * What `GET /admin/guards` answers, as the registry's records: what each
 * scans with is its detectors or its webhook, of which only the URL is read
 * (the page never holds a webhook's secret, not even its reference).
 */
export const GuardsSchema = z.object({
	guards: z.array(
		GuardRecordSchema.pick({ name: true, stage: true, applies: true, action: true }).extend({
			detect: GuardRecordSchema.shape.detect.optional(),
			webhook: z.object({ url: z.string() }).nullish(),
		}),
	),
});
export type GuardView = z.output<typeof GuardsSchema>["guards"][number];
/** What `GET /admin/approvals` answers: the registry's records of what waits. */
const ApprovalsSchema = z.object({ approvals: z.array(ApprovalRecordSchema) });
const ConnectionsSchema = z.object({
	connections: z.array(z.object({ server: z.string(), who: z.string(), connectedAt: z.string() })),
});

export type Check = z.output<typeof CheckSchema>;

/** One server as the overview lists it: its check and its tools against their pins (each, or why not). */
export interface ServerRow {
	name: string;
	/** null: reached through connectors, or made from a document. */
	url: string | null;
	auth: string;
	pinning: string;
	check: Check | Failed;
	tools: ToolsView | Failed;
	/** null: reached by its URL. */
	connectors: ConnectorsView | null;
	/** null: not made from an OpenAPI document. */
	openapi: OpenApiView | null;
}

export interface Overview {
	servers: ServerRow[];
	virtualServers: z.output<typeof VirtualServersSchema>["virtualServers"];
	keys: z.output<typeof KeysSchema>["keys"];
	accessRules: z.output<typeof AccessRulesSchema>["accessRules"];
	policies: z.output<typeof PoliciesSchema>["policies"];
	/** Content guards, in the order they run (by name). */
	guards: GuardView[];
	/** Calls an approve policy holds, waiting for an approver (decision 0117). */
	approvals: z.output<typeof ApprovalsSchema>["approvals"];
	connections: z.output<typeof ConnectionsSchema>["connections"];
}

/** How many servers are checked at once: each check and tool list is an upstream request (six per invocation at most). */
const SERVERS_AT_ONCE = 3;

/** Why one part could not be read: the admin API's sentence, shown in its place, and its status. */
export interface Failed {
	failed: string;
	status: number;
}

/** A refusal of one part, as the sentence shown in its place; anything else fails the page. */
async function orFailed<T>(read: () => Promise<T>): Promise<T | Failed> {
	try {
		return await read();
	} catch (error) {
		if (error instanceof AdminRefused) return { failed: error.message, status: error.status };
		throw error;
	}
}

/** Tools that wait for the operator: changed since approved, or new on a server whose tools were recorded. */
export function needingApproval(view: ToolsView): string[] {
	if (view.pinning === "off") return [];
	return view.tools
		.filter((tool) => tool.state === "changed" || (tool.state === "new" && view.recorded))
		.map((tool) => tool.name);
}

/** What a server's page shows besides its name. */
export type ServerDetail = Pick<ServerRow, "check" | "tools" | "connectors" | "openapi">;

/** One server's check and tool states. */
export async function serverDetail(caller: AdminCaller, name: string): Promise<ServerDetail> {
	const [checked, tools] = await Promise.all([
		orFailed(() => readAdmin(caller, `/servers/${segment(name)}?check=true`, CheckedSchema)),
		orFailed(() => readAdmin(caller, `/servers/${segment(name)}/tools`, ToolsViewSchema)),
	]);
	if ("failed" in checked) return { check: checked, tools, connectors: null, openapi: null };
	const openapi = checked.openapi ?? null;
	// A server reached by URL or made from a document reads nothing more.
	if (!checked.connector) return { check: checked.check, tools, connectors: null, openapi };
	const tokens = await orFailed(
		async () =>
			(await readAdmin(caller, `/servers/${segment(name)}/connector-tokens`, ConnectorTokensSchema)).connectorTokens,
	);
	return { check: checked.check, tools, connectors: { online: checked.connectors ?? [], tokens }, openapi };
}

/** Everything the overview shows. */
export async function readOverview(caller: AdminCaller): Promise<Overview> {
	const [servers, virtualServers, keys, accessRules, policies, guards, approvals] = await Promise.all([
		readAdmin(caller, "/servers", ServersSchema),
		readAdmin(caller, "/virtual-servers", VirtualServersSchema),
		readAdmin(caller, "/keys", KeysSchema),
		readAdmin(caller, "/access-rules", AccessRulesSchema),
		readAdmin(caller, "/policies", PoliciesSchema),
		readAdmin(caller, "/guards", GuardsSchema),
		readAdmin(caller, "/approvals", ApprovalsSchema),
	]);
	const rows: ServerRow[] = [];
	for (let at = 0; at < servers.servers.length; at += SERVERS_AT_ONCE) {
		const batch = servers.servers.slice(at, at + SERVERS_AT_ONCE);
		rows.push(
			...(await Promise.all(
				batch.map(async (server) => ({
					name: server.name,
					url: server.url ?? null,
					auth: server.auth.type,
					pinning: server.pinning,
					...(await serverDetail(caller, server.name)),
					// From the list, so that a row says where its tools come from even when its check failed.
					openapi: server.openapi ?? null,
				})),
			)),
		);
	}
	const oauth = servers.servers.filter((server) => server.auth.type === "oauth");
	const connections = (
		await Promise.all(
			oauth.map(
				async (server) =>
					(
						await readAdmin(caller, `/connections?server=${segment(server.name)}`, ConnectionsSchema)
					).connections,
			),
		)
	).flat();
	return {
		servers: rows,
		virtualServers: virtualServers.virtualServers,
		keys: keys.keys,
		accessRules: accessRules.accessRules,
		policies: policies.policies,
		guards: guards.guards,
		approvals: approvals.approvals,
		connections,
	};
}
