import { type ApprovalRecord, ApprovalRecordSchema, type ApprovalStatus } from "../approval-records.ts";

const PREFIX = "approval:";

/**
 * Approvals as the registry lists them (see approval-records.ts), in the
 * object's key-value storage: one key per approval, kept until it can no
 * longer be decided, so no table and no migration for what lives minutes.
 */
export class ApprovalsResource {
	constructor(private readonly storage: DurableObjectStorage) {}

	/** A call started waiting. */
	async held(record: ApprovalRecord): Promise<void> {
		await this.storage.put(PREFIX + record.id, ApprovalRecordSchema.parse(record));
	}

	/** The approval, or null: never held here, or past its wait and swept. */
	async get(id: string): Promise<ApprovalRecord | null> {
		const stored = await this.storage.get(PREFIX + id);
		if (stored === undefined) return null;
		return ApprovalRecordSchema.parse(stored);
	}

	/** It ended (`status`, decided by `decidedBy`); returns false when it had ended already, which changes nothing. */
	async ended(id: string, status: Exclude<ApprovalStatus, "waiting">, decidedBy?: string): Promise<boolean> {
		const record = await this.get(id);
		if (record === null || record.status !== "waiting") return false;
		await this.storage.put(PREFIX + id, { ...record, status, ...(decidedBy === undefined ? {} : { decidedBy }) });
		return true;
	}

	/** What waits now, oldest first; approvals past their wait are forgotten on the way. */
	async waiting(now: number): Promise<ApprovalRecord[]> {
		const stored = await this.storage.list({ prefix: PREFIX });
		const waiting: ApprovalRecord[] = [];
		const over: string[] = [];
		for (const [key, value] of stored) {
			const record = ApprovalRecordSchema.parse(value);
			if (record.until < now) over.push(key);
			else if (record.status === "waiting") waiting.push(record);
		}
		if (over.length > 0) await this.storage.delete(over.slice(0, 128));
		return waiting.sort((a, b) => a.since - b.since || (a.id < b.id ? -1 : 1));
	}
}
