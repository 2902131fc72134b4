import type { KvPublisher } from "../kv-publisher.ts";
import { KV_NAMES } from "../kv-records.ts";
import type { PolicyInput, PolicyRecord } from "../policy-records.ts";
import type { RegistryTables } from "../tables/registry-tables.ts";
import { unknownApplies } from "./unknown-applies.ts";

/** The RegistryDO's tool policies: kept and published here, compiled by governance. */
export class PoliciesResource {
	constructor(
		private readonly tables: RegistryTables,
		private readonly publisher: KvPublisher,
	) {}

	/**
	 * Creates or replaces a tool policy and publishes the policies. The
	 * expression was compiled by the caller (the admin route, with governance's
	 * compiler); here every name in `applies` must exist, since a policy whose
	 * server or key is misspelt would silently apply nowhere. A refused policy
	 * leaves the existing one as it was.
	 */
	async put(
		name: string,
		input: PolicyInput,
	): Promise<{ policy: PolicyRecord; created: boolean } | { invalid: string }> {
		const invalid = unknownApplies(this.tables, input.applies);
		if (invalid) return { invalid };
		const written = this.tables.policies.write(name, input, Date.now());
		await this.publisher.publishWrite([KV_NAMES.policies]);
		return written;
	}

	get(name: string): PolicyRecord | null {
		return this.tables.policies.get(name);
	}

	list(): PolicyRecord[] {
		return this.tables.policies.list();
	}

	delete(name: string): Promise<boolean> {
		return this.publisher.publishDelete(this.tables.policies.delete(name), () => [KV_NAMES.policies]);
	}
}
