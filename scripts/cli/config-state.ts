/**
 * The registry's state as a gateway config: what the admin API lists, turned
 * into the bodies it takes, so that what a file declares and what the gateway
 * holds compare field by field (`mcpgw plan`) and export writes the same format.
 */
import type { z } from "zod";
import type { AdminClient } from "./admin-client.ts";
import { heldOpenApi, maskedOpenApiNotes } from "./config-openapi.ts";
import { ENTRY_SCHEMAS, type GatewayConfig, KINDS, type Kind } from "./gateway-config.ts";

/** A JSON value with object keys sorted and absent (undefined, null) fields dropped: one spelling per value. */
export function canonical(value: unknown): unknown {
	if (Array.isArray(value)) return value.map(canonical);
	if (value !== null && typeof value === "object") {
		const entries = Object.entries(value)
			.filter(([, field]) => field !== undefined && field !== null)
			.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		return Object.fromEntries(entries.map(([key, field]) => [key, canonical(field)]));
	}
	return value;
}

export function sameValue(a: unknown, b: unknown): boolean {
	return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

/** A key as `GET /admin/keys` lists it (never its secret). */
export interface ListedKey {
	id: string;
	name: string | null;
	userPath: string;
	servers: string[] | null;
	maxSessions: number | null;
	rateClass: string | null;
	disclosure?: string;
	alwaysList?: string[];
	format: string;
	createdAt: string;
}

/** One entry the gateway holds: its name, its body as the file would declare it, and what else the API said. */
export interface HeldEntry {
	name: string;
	body: Record<string, unknown>;
	/**
	 * Keys: the id; others: the generation and updatedAt, which an idempotent
	 * apply leaves alone; a document server: its inline document as given.
	 */
	meta: Record<string, unknown>;
}

export type HeldState = Record<Kind, HeldEntry[]>;

/** The fields of a listed record that make up its admin body, parsed as a body is (defaults filled in). */
function bodyOf(kind: Kind, record: Record<string, unknown>): Record<string, unknown> {
	const schema = ENTRY_SCHEMAS[kind] as z.ZodObject;
	const fields = Object.keys(schema.shape);
	const picked = Object.fromEntries(fields.map((field) => [field, record[field]]).filter(([, value]) => value != null));
	const parsed = schema.safeParse(picked);
	// A record older than today's rules (say, a name no longer allowed) is compared as it is.
	return canonical(parsed.success ? parsed.data : picked) as Record<string, unknown>;
}

/**
 * An inline document as it was given, for export: the body is canonical
 * (keys sorted, nulls dropped) to compare, which a document must not be when
 * it is written back.
 */
function documentOf(record: Record<string, unknown>): { document?: unknown } {
	const openapi = record.openapi as { document?: unknown } | undefined;
	return openapi?.document === undefined ? {} : { document: openapi.document };
}

/** Everything the gateway holds, section by section. */
export async function readHeldState(client: AdminClient): Promise<HeldState> {
	const [servers, virtualServers, accessRules, policies, guards, keys] = await Promise.all([
		client.request<{ servers: Record<string, unknown>[] }>("GET", "/servers"),
		client.request<{ virtualServers: Record<string, unknown>[] }>("GET", "/virtual-servers"),
		client.request<{ accessRules: Record<string, unknown>[] }>("GET", "/access-rules"),
		client.request<{ policies: Record<string, unknown>[] }>("GET", "/policies"),
		client.request<{ guards: Record<string, unknown>[] }>("GET", "/guards"),
		client.request<{ keys: ListedKey[] }>("GET", "/keys"),
	]);
	// A document server's openapi as the body that made it (its inline document read from the gateway).
	const serverRecords = await Promise.all(
		servers.servers.map(async (record) =>
			record.openapi === undefined
				? record
				: { ...record, openapi: await heldOpenApi(client, String(record.name), record.openapi) },
		),
	);
	const named = (kind: Kind, records: Record<string, unknown>[]): HeldEntry[] =>
		records.map((record) => ({
			name: String(record.name),
			body: bodyOf(kind, record),
			meta: { generation: record.generation, updatedAt: record.updatedAt, ...documentOf(record) },
		}));
	return {
		servers: named("servers", serverRecords),
		virtualServers: named("virtualServers", virtualServers.virtualServers),
		accessRules: named("accessRules", accessRules.accessRules),
		policies: named("policies", policies.policies),
		guards: named("guards", guards.guards),
		keys: keys.keys.map((key) => ({
			name: key.name ?? "",
			body: bodyOf("keys", key as unknown as Record<string, unknown>),
			meta: { id: key.id, format: key.format },
		})),
	};
}

/**
 * The fields each section's entries must have (of a server, the one of url,
 * connector and openapi it has); the rest have defaults, which export leaves out.
 */
const REQUIRED: Record<Kind, readonly string[]> = {
	servers: ["url", "connector", "openapi"],
	virtualServers: ["servers"],
	accessRules: ["match"],
	policies: ["expression", "effect"],
	// A guard has detectors or a webhook, whichever it has.
	guards: ["stage", "action", "detect", "webhook"],
	keys: [],
};

/** A body without the fields that equal their defaults: what a person would have written. */
export function withoutDefaults(kind: Kind, body: Record<string, unknown>): Record<string, unknown> {
	const required = Object.fromEntries(
		REQUIRED[kind].filter((field) => body[field] !== undefined).map((field) => [field, body[field]]),
	);
	const defaults = ENTRY_SCHEMAS[kind].safeParse(required);
	if (!defaults.success) return body;
	const byDefault = defaults.data as Record<string, unknown>;
	return Object.fromEntries(
		Object.entries(body).filter(([field, value]) => field in required || !sameValue(value, byDefault[field])),
	);
}

/** The held state in the file's format (keys without a name cannot be declared, and are left out). */
export function exportConfig(
	state: HeldState,
	schemaRef?: string,
): { config: Record<string, unknown>; notes: string[] } {
	const notes: string[] = [];
	const config: Record<string, unknown> = schemaRef ? { $schema: schemaRef } : {};
	for (const kind of KINDS) {
		const section: Record<string, unknown> = {};
		for (const entry of state[kind]) {
			if (kind === "keys" && entry.name === "") {
				notes.push(`key ${entry.meta.id} has no name, so it cannot be declared; it is left out.`);
				continue;
			}
			if (entry.name in section) {
				notes.push(
					`more than one key is named '${entry.name}'; ${entry.meta.id} is left out (one declaration stands for one key).`,
				);
				continue;
			}
			section[entry.name] = withoutDefaults(kind, entry.body);
			if (entry.meta.document !== undefined) {
				const body = section[entry.name] as { openapi: Record<string, unknown> };
				body.openapi = { ...body.openapi, document: entry.meta.document };
			}
			if (kind === "servers") notes.push(...maskedNotes(entry));
		}
		config[kind] = section;
	}
	return { config, notes };
}

/** What the admin API masks of a server cannot be exported: say so, where it happens. */
function maskedNotes(entry: HeldEntry): string[] {
	const notes: string[] = [];
	const headers = (entry.body.headers ?? {}) as Record<string, string>;
	for (const [header, value] of Object.entries(headers)) {
		if (value === "***") {
			notes.push(
				`servers.${entry.name}.headers.${header} holds a literal value the gateway masks: exported as "***"; write a \${UPSTREAM_…} reference instead.`,
			);
		}
	}
	if (typeof entry.body.url === "string" && entry.body.url.includes("=***")) {
		notes.push(`servers.${entry.name}.url has query values the gateway masks: exported as "***".`);
	}
	notes.push(...maskedOpenApiNotes(entry.name, entry.body.openapi as Record<string, unknown> | undefined));
	return notes;
}

export type { GatewayConfig };
