/**
 * `mcpgw apply`: a plan carried out through the admin API, in its order
 * (servers, virtual servers, access rules, policies, guards, keys; deletes the other
 * way round). Entries the plan leaves unchanged are not written at all, so a
 * second apply changes nothing: no generation, no `updatedAt`, no key moves.
 */
import type { AdminClient } from "./admin-client.ts";
import type { Change, Plan } from "./config-plan.ts";
import type { Kind } from "./gateway-config.ts";

/** Each section's admin path. */
const PATHS: Record<Exclude<Kind, "keys">, string> = {
	servers: "/servers",
	virtualServers: "/virtual-servers",
	accessRules: "/access-rules",
	policies: "/policies",
	guards: "/guards",
};

export interface Applied {
	change: Change;
	/** Keys made: the id and the secret, which is shown this once. */
	key?: { id: string; key: string };
	/** Servers written: whether the gateway could reach it. */
	check?: { reachable: boolean; speaksMcp: boolean; era: string | null; detail: string };
}

/** Carries out the plan's changes one by one; stops at the first the gateway refuses (what was done stays done). */
export async function applyPlan(
	client: AdminClient,
	plan: Plan,
	onApplied: (applied: Applied) => void,
): Promise<Applied[]> {
	const done: Applied[] = [];
	for (const change of plan.changes) {
		const applied = await applyChange(client, change);
		done.push(applied);
		onApplied(applied);
	}
	return done;
}

async function applyChange(client: AdminClient, change: Change): Promise<Applied> {
	const name = encodeURIComponent(change.name);
	if (change.kind === "keys") {
		let key: Applied["key"];
		if (change.action !== "delete") {
			const created = await client.request<{ id: string; key: string }>("POST", "/keys", {
				name: change.name,
				...change.body,
			});
			key = { id: created.id, key: created.key };
		}
		for (const id of change.revokes ?? []) await client.request("DELETE", `/keys/${encodeURIComponent(id)}`);
		return key ? { change, key } : { change };
	}
	const path = `${PATHS[change.kind]}/${name}`;
	if (change.action === "delete") {
		await client.request("DELETE", path);
		return { change };
	}
	const answer = await client.request<{ check?: Applied["check"] }>("PUT", path, change.body);
	return answer.check ? { change, check: answer.check } : { change };
}
