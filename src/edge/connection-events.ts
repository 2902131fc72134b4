import { vaultObject } from "../credentials/vault-do.ts";
import type { Env } from "../env.ts";
import { describeError } from "../mcp/gateway-error.ts";
import { parsePrincipalId } from "../registry/access-rules.ts";
import { keySessions } from "../registry/key-sessions-do.ts";
import { registryStub } from "../registry/registry-stub.ts";
import type { ConnectionRecord } from "../registry/schemas.ts";

/**
 * What follows a person's connection being made or removed, wherever it
 * happened (the connect callback, the connections page, the admin API): the
 * registry's index of who is connected (for operators, and to find whom a
 * rule's removal cuts off), and the person's live sessions told, so their
 * member session on that server is retired (it was opened with the old
 * credential, or none) and aggregates list the server's tools, or stop.
 */
export async function connected(
	env: Env,
	record: Omit<ConnectionRecord, "id">,
	principalId: string,
	elicitationId: string | null,
): Promise<void> {
	await registryStub(env).recordConnection(record);
	await tellSessions(env, principalId, record.server, elicitationId);
}

/** Disconnects one server for one vault: tokens deleted (and revoked at the upstream), index row gone, sessions told. */
export async function disconnected(env: Env, vault: string, server: string): Promise<boolean> {
	const registry = registryStub(env);
	const rows = await registry.connections({ vault });
	const removed = await vaultObject(env, vault).disconnect(server);
	await registry.forgetConnection(server, vault);
	for (const row of rows.filter((candidate) => candidate.server === server)) {
		await tellSessions(env, holderOf(row), server, null);
	}
	return removed;
}

/** Every connection of one vault (a person cut off): how many were removed. */
export async function disconnectedEverywhere(env: Env, vault: string): Promise<number> {
	const rows = await registryStub(env).connections({ vault });
	await vaultObject(env, vault).disconnectAll();
	for (const row of rows) {
		await registryStub(env).forgetConnection(row.server, vault);
		await tellSessions(env, holderOf(row), row.server, null);
	}
	return rows.length;
}

/** The connections made under an access rule that is gone: each removed, its person's sessions told. */
export async function disconnectedUnderRule(env: Env, rule: string): Promise<number> {
	const rows = await registryStub(env).connections({ rule });
	for (const row of rows) await disconnected(env, row.vault, row.server);
	return rows.length;
}

/** Whose session ledger holds the row's person's sessions: a key's own, or the person's under the rule. */
function holderOf(row: ConnectionRecord): string {
	if (row.keyId !== null) return row.keyId;
	// The ledger is the person's under the rule whatever the grant or generation (limitHolderOf), so a
	// principal id of that rule and user names it.
	return `oauth~${row.rule ?? ""}~-~${row.vault.replace(/^person:/, "")}`;
}

/**
 * Tells every live session of the principal's ledger (`KeySessionsDO`, one
 * per person under a rule, or per key) that `server`'s credential changed.
 * Best effort: a session that cannot be reached finds out at its next call.
 */
async function tellSessions(
	env: Env,
	principalId: string,
	server: string,
	elicitationId: string | null,
): Promise<void> {
	// A principal id whose parts say nothing of the grant reaches the same ledger (limitHolderOf).
	if (principalId.startsWith("oauth~") && !parsePrincipalId(principalId)) return;
	const places = await keySessions(env, principalId).places();
	// One at a time: a person holds few sessions, and a Worker may keep only six requests open at once.
	for (const place of places) {
		try {
			await env.SESSIONS.get(env.SESSIONS.idFromString(place)).connectionChanged(server, elicitationId);
		} catch (error) {
			console.warn(`a session of ${server}'s connection could not be told: ${describeError(error)}`);
		}
	}
}
