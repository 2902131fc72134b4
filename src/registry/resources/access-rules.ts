import type { AccessRuleInput, AccessRuleRecord } from "../access-rules.ts";
import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";
import { unknownGrants } from "./unknown-grants.ts";

/** The RegistryDO's access rules: who signs in as what, published as one list. */
export class AccessRulesResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
	) {}

	/**
	 * Creates or replaces an access rule (see `AccessRulesTable.write` for what a
	 * replacement keeps), and publishes the rules. Its `servers` are checked as
	 * a key's are; a refused rule leaves the existing one as it was.
	 */
	async put(
		name: string,
		input: AccessRuleInput,
	): Promise<{ rule: AccessRuleRecord; created: boolean } | { invalid: string }> {
		const invalid = unknownGrants(this.tables.endpoints, input.servers);
		if (invalid) return { invalid };
		const written = this.tables.accessRules.write(name, input, Date.now());
		await this.publisher.publishWrite([KV_NAMES.rules]);
		return written;
	}

	list(): AccessRuleRecord[] {
		return this.tables.accessRules.list();
	}

	delete(name: string): Promise<boolean> {
		return this.publisher.publishDelete(this.tables.accessRules.delete(name), () => [KV_NAMES.rules]);
	}
}
