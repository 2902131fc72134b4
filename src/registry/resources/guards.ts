import type { GuardInput, GuardRecord } from "../guard-records.ts";
import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";
import { unknownApplies } from "./unknown-applies.ts";

/** The RegistryDO's content guards: kept and published here, run by governance (src/governance/guards/). */
export class GuardsResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
	) {}

	/** Creates or replaces a guard and publishes the guards; every name in `applies` must exist. A refused guard changes nothing. */
	async put(name: string, input: GuardInput): Promise<{ guard: GuardRecord; created: boolean } | { invalid: string }> {
		const invalid = unknownApplies(this.tables, input.applies);
		if (invalid) return { invalid };
		const written = this.tables.guards.write(name, input, Date.now());
		await this.publisher.publishWrite([KV_NAMES.guards]);
		return written;
	}

	get(name: string): GuardRecord | null {
		return this.tables.guards.get(name);
	}

	list(): GuardRecord[] {
		return this.tables.guards.list();
	}

	delete(name: string): Promise<boolean> {
		return this.publisher.publishDelete(this.tables.guards.delete(name), () => [KV_NAMES.guards]);
	}
}
