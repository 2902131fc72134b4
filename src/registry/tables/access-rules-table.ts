import { randomToken } from "../../primitives/crypto.ts";
import {
	type AccessRuleInput,
	type AccessRuleRecord,
	AccessRuleRecordSchema,
	matchChanged,
	orderRules,
} from "../access-rules.ts";
import { BOOLEAN_INTEGER, JSON_TEXT, RecordTable } from "./record-rows.ts";
import type { TableSchema } from "./table-schema.ts";

/** The access rules (who signs in as what), one row per name. */

const accessRules = new RecordTable("access_rules", "name", AccessRuleRecordSchema, {
	match: JSON_TEXT,
	servers: JSON_TEXT,
	admin: BOOLEAN_INTEGER,
	approver: BOOLEAN_INTEGER,
	alwaysList: JSON_TEXT,
});

const added = (column: string, type: string) => ({ table: "access_rules", column, type });

export const ACCESS_RULES_SCHEMA: TableSchema = {
	create: `
		CREATE TABLE IF NOT EXISTS access_rules (
			name TEXT PRIMARY KEY,
			match TEXT NOT NULL, -- JSON object of the claims to match
			servers TEXT, -- JSON array of server names; NULL means all
			user_path TEXT NOT NULL,
			max_sessions INTEGER,
			rate_class TEXT NOT NULL DEFAULT 'standard',
			priority INTEGER NOT NULL,
			admin INTEGER NOT NULL DEFAULT 0, -- 1: its identities may use the operators' dashboard
			approver INTEGER NOT NULL DEFAULT 0, -- 1: its identities may decide held calls at /approvals
			disclosure TEXT NOT NULL DEFAULT 'full',
			always_list TEXT NOT NULL DEFAULT '[]', -- JSON array of globs
			generation TEXT NOT NULL,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL
		);
	`,
	addedColumns: [
		// Rules made before rate classes were counted by KEY_RATE_LIMITER, which is standard.
		added("rate_class", "TEXT NOT NULL DEFAULT 'standard'"),
		// Rules made before the admin grant grant no admin.
		added("admin", "INTEGER NOT NULL DEFAULT 0"),
		// Rules made before tool search list every tool, as they did.
		added("disclosure", "TEXT NOT NULL DEFAULT 'full'"),
		added("always_list", "TEXT NOT NULL DEFAULT '[]'"),
		// Rules made before approvers make no approvers.
		added("approver", "INTEGER NOT NULL DEFAULT 0"),
	],
};

export class AccessRulesTable {
	constructor(private readonly sql: SqlStorage) {}

	/** Every access rule, in the order they are tried. */
	list(): AccessRuleRecord[] {
		return orderRules(accessRules.select(this.sql, ""));
	}

	/** Those of `names` that are access rules. */
	existing(names: readonly string[]): Set<string> {
		return accessRules.existing(this.sql, names);
	}

	/** Every name, in order (for "did you mean" in refusals). */
	names(): string[] {
		return accessRules.keys(this.sql);
	}

	/**
	 * Creates or replaces an access rule. A replacement keeps its generation
	 * unless its match changed: sessions then follow the new grant as a key's
	 * do, while a new match (who the rule is for) ends the old sessions.
	 */
	write(name: string, input: AccessRuleInput, now: number): { rule: AccessRuleRecord; created: boolean } {
		const existing = accessRules.get(this.sql, name);
		const rule = accessRules.put(this.sql, {
			name,
			match: input.match,
			servers: input.servers ?? null,
			userPath: input.userPath,
			maxSessions: input.maxSessions ?? null,
			rateClass: input.rateClass,
			priority: input.priority,
			admin: input.admin,
			approver: input.approver,
			disclosure: input.disclosure,
			alwaysList: input.alwaysList,
			generation: existing && !matchChanged(existing.match, input.match) ? existing.generation : randomToken(12),
			createdAt: existing?.createdAt ?? now,
			updatedAt: now,
		});
		return { rule, created: existing === null };
	}

	delete(name: string): boolean {
		return accessRules.delete(this.sql, name);
	}
}
