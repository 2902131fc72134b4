import { env, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { loadPolicies } from "../src/governance/policy-cache.ts";
import { kvRegistryReader } from "../src/registry/registry-reader.ts";
import { forgetIsolateCaches } from "../src/primitives/expiring-map.ts";
import type { SessionDO } from "../src/session/session-do.ts";

it("cross: the first context ends before the load settles", async () => {
	const errors: string[] = [];
	for (let round = 0; round < 5; round++) {
		forgetIsolateCaches();
		const a = env.SESSIONS.get(env.SESSIONS.idFromName(`y-${round}-a`));
		const b = env.SESSIONS.get(env.SESSIONS.idFromName(`y-${round}-b`));
		await runInDurableObject(a, async (instance: SessionDO) => {
			const own = (instance as unknown as { env: Env }).env;
			void loadPolicies(kvRegistryReader(own.REGISTRY_KV, 0), 60_000).catch((e) => errors.push(`a: ${e}`));
		});
		await runInDurableObject(b, async (instance: SessionDO, state) => {
			const own = (instance as unknown as { env: Env }).env;
			try {
				await loadPolicies(kvRegistryReader(own.REGISTRY_KV, 0), 60_000);
				await state.storage.put("k", 1);
				await own.REGISTRY_KV.get("servers");
			} catch (error) {
				errors.push(String(error));
			}
		});
	}
	expect(errors).toEqual([]);
});
