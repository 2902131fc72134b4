import { env, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { pinsFor } from "../src/governance/pin-records.ts";
import { loadPolicies } from "../src/governance/policy-cache.ts";
import type { PolicyRecord } from "../src/registry/policy-records.ts";
import type { RegistryReader } from "../src/registry/registry-reader.ts";
import type { ServerPins } from "../src/registry/tool-pins.ts";
import type { SessionDO } from "../src/session/session-do.ts";
import { eventually } from "./support/eventually.ts";

/**
 * What the isolate's caches share between Durable Objects: settled values,
 * never a load under way. Two session objects of one isolate load the same
 * key at once, each through a reader of its own (as each object has), while
 * the reads are held open: each object reads for itself, its own concurrent
 * loads share one read, and once a read has settled a third object reads nothing.
 */

/** A registry reader whose policy and pin reads wait until the test releases them, counting each. */
function heldReader() {
	let release: () => void = () => undefined;
	const held = new Promise<void>((resolve) => {
		release = resolve;
	});
	const counts = { policies: 0, pins: 0 };
	const unused = () => Promise.reject(new Error("not read by these tests"));
	const reader: RegistryReader = {
		key: unused,
		endpoint: unused,
		servers: unused,
		rules: unused,
		guards: unused,
		policies: async () => {
			counts.policies++;
			await held;
			return [] as PolicyRecord[];
		},
		pins: async () => {
			counts.pins++;
			await held;
			return null as ServerPins | null;
		},
	};
	return { reader, counts, release };
}

const objectNamed = (name: string) =>
	env.SESSIONS.get(env.SESSIONS.idFromName(`isolate-caches-${name}-${crypto.randomUUID()}`));

describe("isolate caches across Durable Objects", () => {
	it("two objects loading one key at once each read it themselves (neither awaits the other's read), their own concurrent loads share one, and a settled value is every object's", async () => {
		const [a, b] = [heldReader(), heldReader()];
		// Started inside each object, as a session's open loads the policies; both held open at once.
		const inA = runInDurableObject(objectNamed("a"), (_: SessionDO) =>
			Promise.all([loadPolicies(a.reader, 60_000), loadPolicies(a.reader, 60_000)]),
		);
		const inB = runInDurableObject(objectNamed("b"), (_: SessionDO) => loadPolicies(b.reader, 60_000));
		// Both objects are reading (and neither read has settled) before either is let through.
		await eventually(() => a.counts.policies > 0 && b.counts.policies > 0, "both objects reading");
		// B is released first: had it waited on A's read, it could not finish before A's is released.
		b.release();
		expect((await inB).policies).toEqual([]);
		a.release();
		await inA;
		expect(a.counts.policies).toBe(1);
		expect(b.counts.policies).toBe(1);
		const c = heldReader();
		await runInDurableObject(objectNamed("c"), (_: SessionDO) => loadPolicies(c.reader, 60_000));
		expect(c.counts.policies).toBe(0);
	});

	it("the same for a server's pins: one read per object while neither has settled, none after", async () => {
		const server = { name: `pins-${crypto.randomUUID()}`, generation: "gen-1" };
		const [a, b] = [heldReader(), heldReader()];
		const inA = runInDurableObject(objectNamed("a"), (_: SessionDO) =>
			Promise.all([pinsFor(a.reader, server, 60_000), pinsFor(a.reader, server, 60_000)]),
		);
		const inB = runInDurableObject(objectNamed("b"), (_: SessionDO) => pinsFor(b.reader, server, 60_000));
		await eventually(() => a.counts.pins > 0 && b.counts.pins > 0, "both objects reading");
		b.release();
		expect(await inB).toBeNull();
		a.release();
		await inA;
		expect([a.counts.pins, b.counts.pins]).toEqual([1, 1]);
		const c = heldReader();
		await runInDurableObject(objectNamed("c"), (_: SessionDO) => pinsFor(c.reader, server, 60_000));
		expect(c.counts.pins).toBe(0);
	});
});
