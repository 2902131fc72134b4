import { orderPolicies, type PolicyInput, type PolicyRecord, PolicyRecordSchema } from "../policy-records.ts";
import { JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/** Tool policies (CEL), one row per name: governance compiles them; the registry keeps and publishes them. */

const policies = new RecordTable("policies", "name", PolicyRecordSchema, {
	applies: JSON_TEXT,
	approvalWebhook: JSON_TEXT,
});

export const POLICIES_SCHEMA: TableSchema = {
	create: `
		CREATE TABLE IF NOT EXISTS policies (
			name TEXT PRIMARY KEY,
			expression TEXT NOT NULL,
			effect TEXT NOT NULL, -- 'allow', 'deny', 'confirm' or 'approve'
			applies TEXT, -- JSON object of servers, virtualServers, keys, rules; NULL means everywhere
			priority INTEGER NOT NULL,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL,
			approval_timeout_seconds INTEGER, -- NULL: the default wait of an approve policy
			approval_webhook TEXT -- JSON object { url, secret reference }; NULL: no notice
		);
	`,
	addedColumns: [
		// Policies made before approvals wait the default, if they ever approve.
		{ table: "policies", column: "approval_timeout_seconds", type: "INTEGER" },
		// Policies made before approvers' notices send none.
		{ table: "policies", column: "approval_webhook", type: "TEXT" },
	],
};

export class PoliciesTable {
	constructor(private readonly sql: SqlStorage) {}

	/** Every policy, in the order they are evaluated. */
	list(): PolicyRecord[] {
		return orderPolicies(policies.select(this.sql, ""));
	}

	get(name: string): PolicyRecord | null {
		return policies.get(this.sql, name);
	}

	/** Every name, in order (for "did you mean" in refusals). */
	names(): string[] {
		return policies.keys(this.sql);
	}

	/** Creates or replaces a policy; a replacement keeps when it was created. */
	write(name: string, input: PolicyInput, now: number): { policy: PolicyRecord; created: boolean } {
		const existing = policies.get(this.sql, name);
		const policy = policies.put(this.sql, {
			name,
			expression: input.expression,
			effect: input.effect,
			applies: input.applies ?? null,
			approvalTimeoutSeconds: input.approvalTimeoutSeconds ?? null,
			approvalWebhook: input.approvalWebhook ?? null,
			priority: input.priority,
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		return { policy, created: existing === null };
	}

	delete(name: string): boolean {
		return policies.delete(this.sql, name);
	}
}
