import type { z } from "zod";
import { withTimeout } from "../primitives/timing.ts";
import { type AccessRuleRecord, parsePrincipalId, principalRecord } from "./access-rules.ts";
import type { GuardRecord } from "./guard-records.ts";
import {
	AccessRuleListSchema,
	GuardListSchema,
	KV_NAMES,
	PolicyListSchema,
	ServerListSchema,
	type StoredKey,
	StoredKeySchema,
} from "./kv-records.ts";
import type { PolicyRecord } from "./policy-records.ts";
import {
	type ResolvedEndpoint,
	ResolvedEndpointSchema,
	type ServerRecord,
	type SessionCheckInput,
	type SessionCheckResult,
} from "./schemas.ts";
import { checkSessionAgainst } from "./session-check.ts";
import { type ServerPins, ServerPinsSchema } from "./tool-pins.ts";

/** The registry's read path: what the edge and the sessions need, from Workers KV. */
export interface RegistryReader {
	key(id: string): Promise<StoredKey | null>;
	endpoint(name: string): Promise<ResolvedEndpoint | null>;
	servers(): Promise<ServerRecord[]>;
	/** Every access rule, in the order they are tried. */
	rules(): Promise<AccessRuleRecord[]>;
	/** Every tool policy, in the order they are evaluated (compiled by governance, per isolate). */
	policies(): Promise<PolicyRecord[]>;
	/** Every content guard, by name (run by governance, kept per isolate). */
	guards(): Promise<GuardRecord[]>;
	/** A server's approved tool definitions; null until its tools were first recorded. */
	pins(server: string): Promise<ServerPins | null>;
}

/** A reader that counts its reads (cost reports). */
export interface CountingReader extends RegistryReader {
	readonly reads: number;
}

/** A KV read that does not answer within this counts as failed: a slow KV is an unreadable registry. */
const KV_READ_TIMEOUT_MS = 5_000;

/**
 * Reads published records from Workers KV. `cacheTtlSeconds` lets the
 * location's KV cache serve a record for that long (0: KV's default). A
 * record that does not parse is an error, as is KV failing or not answering
 * within `timeoutMs`: all count as an unreadable registry.
 */
export function kvRegistryReader(
	kv: Pick<KVNamespace, "get">,
	cacheTtlSeconds: number,
	timeoutMs = KV_READ_TIMEOUT_MS,
): CountingReader {
	let reads = 0;
	const read = async <T>(name: string, schema: z.ZodType<T>): Promise<T | null> => {
		reads++;
		const get = cacheTtlSeconds > 0 ? kv.get(name, { type: "json", cacheTtl: cacheTtlSeconds }) : kv.get(name, "json");
		const value: unknown = await withTimeout(get, timeoutMs, `reading ${name} from KV`);
		if (value === null) return null;
		const parsed = schema.safeParse(value);
		if (!parsed.success) throw new Error(`registry record ${name} is not readable: ${parsed.error.issues[0]?.message}`);
		return parsed.data;
	};
	return {
		get reads() {
			return reads;
		},
		key: (id) => read(KV_NAMES.key(id), StoredKeySchema),
		endpoint: (name) => read(KV_NAMES.endpoint(name), ResolvedEndpointSchema),
		servers: async () => (await read(KV_NAMES.servers, ServerListSchema)) ?? [],
		rules: async () => (await read(KV_NAMES.rules, AccessRuleListSchema)) ?? [],
		policies: async () => (await read(KV_NAMES.policies, PolicyListSchema)) ?? [],
		guards: async () => (await read(KV_NAMES.guards, GuardListSchema)) ?? [],
		pins: (server) => read(KV_NAMES.pins(server), ServerPinsSchema),
	};
}

/** Whether a sign-in's grant still exists at the gateway's authorization server. */
export type GrantCheck = (userId: string, grantId: string) => Promise<boolean>;

/**
 * A session's recheck from the read path: the key record (for a signed-in
 * principal, the access rules and its grant) and the endpoint record (or, for
 * `/mcp`, the server list), read in parallel.
 */
export async function checkSessionWith(
	reader: RegistryReader,
	input: SessionCheckInput,
	grantLive?: GrantCheck,
): Promise<SessionCheckResult> {
	const endpoint = input.endpoint;
	const principal = parsePrincipalId(input.keyId);
	const [key, grant, resolved, all] = await Promise.all([
		principal ? reader.rules().then((rules) => principalRecord(input.keyId, rules)) : reader.key(input.keyId),
		principal?.grantId && grantLive ? grantLive(principal.userId, principal.grantId) : Promise.resolve(true),
		endpoint.kind === "aggregate" ? Promise.resolve(null) : reader.endpoint(endpoint.name),
		endpoint.kind === "aggregate" ? reader.servers() : Promise.resolve([]),
	]);
	if (!grant) return { ok: false, reason: "the sign-in was revoked (its grant no longer exists)" };
	const current: ServerRecord[] =
		resolved?.kind === "server" ? [resolved.server] : resolved?.kind === "virtual" ? resolved.members : all;
	return checkSessionAgainst(
		{ key, endpoint: resolved, servers: new Map(current.map((server) => [server.name, server])) },
		input,
	);
}
