import { env, listDurableObjectIds, runInDurableObject } from "cloudflare:test";
import { sha256Hex } from "../../src/primitives/crypto.ts";
import type { RegistryClient } from "../../src/session/registry-client.ts";
import type { SessionDO } from "../../src/session/session-do.ts";
import { ManualTimers } from "./manual-timers.ts";

/** The SessionDO stub of a session ID, for runInDurableObject and alarms. */
export async function sessionObject(sessionId: string): Promise<DurableObjectStub<SessionDO>> {
	return env.SESSIONS.get(env.SESSIONS.idFromName(await sha256Hex(sessionId)));
}

/** A clock tests move by hand. */
export class ManualClock {
	constructor(public time = Date.now()) {}
	now(): number {
		return this.time;
	}
	advance(ms: number): void {
		this.time += ms;
	}
}

/**
 * The session object `request` makes (a 2026-07-28 request opens one the edge names from a digest
 * no test can know), with its clock and timers made manual; `made` is what the request gave.
 * Throws when the request made no new object.
 */
export async function objectMadeBy<T>(request: () => Promise<T>) {
	const known = new Set((await listDurableObjectIds(env.SESSIONS)).map((id) => id.toString()));
	const made = await request();
	const [created] = (await listDurableObjectIds(env.SESSIONS)).filter((id) => !known.has(id.toString()));
	if (!created) throw new Error("the request made no session object");
	const stub = env.SESSIONS.get(created);
	return { made, stub, ...(await manualTime(stub)) };
}

/** The session object's clock and timers made manual: the test moves the clock and runs the timers that came due. */
export async function manualTime(stub: DurableObjectStub<SessionDO>, clock = new ManualClock()) {
	const timers = new ManualTimers(clock);
	await runInDurableObject(stub, (instance: SessionDO) => {
		instance.clock = clock;
		instance.timers = timers;
	});
	return { clock, timers };
}

/** A registry for SessionDOs that counts reads, can fail, and can hold reads open until released. */
export class TestRegistry implements RegistryClient {
	reads = 0;
	failing = false;
	private gate: Promise<void> | null = null;
	private release: (() => void) | null = null;

	constructor(private readonly inner: RegistryClient) {}

	/** The wrapped client's Workers KV reads. */
	get kvReads(): number {
		return this.inner.kvReads;
	}

	hold(): void {
		this.gate = new Promise((resolve) => {
			this.release = resolve;
		});
	}

	open(): void {
		this.release?.();
		this.gate = null;
	}

	async checkSession(input: Parameters<RegistryClient["checkSession"]>[0]) {
		this.reads++;
		if (this.gate) await this.gate;
		if (this.failing) throw new Error("registry unavailable (test)");
		return this.inner.checkSession(input);
	}
}

/** Gives a session's DO a manual clock and a test registry; returns them with the stub. */
export async function instrumentSession(sessionId: string) {
	const stub = await sessionObject(sessionId);
	const clock = new ManualClock(Date.now() + 1_000);
	const registry = await runInDurableObject(stub, (instance: SessionDO) => {
		instance.clock = clock;
		const wrapped = new TestRegistry(instance.registry);
		instance.registry = wrapped;
		return wrapped;
	});
	const writes = () => runInDurableObject(stub, (instance: SessionDO) => instance.store.writes);
	const stored = () => runInDurableObject(stub, async (_i: SessionDO, state) => (await state.storage.list()).size);
	return { stub, clock, registry, writes, stored };
}

/** The upstream session ids a gateway session holds, by member server name (null: the upstream gave none). */
export async function upstreamSessionIds(sessionId: string): Promise<Record<string, string | null>> {
	const stub = await sessionObject(sessionId);
	const binding = await runInDurableObject(stub, (instance: SessionDO) => instance.store.readBinding());
	return Object.fromEntries(
		Object.entries(binding?.upstreams ?? {}).map(([name, upstream]) => [name, upstream.sessionId]),
	);
}

/** The upstream session id a gateway session holds for one member server; undefined when it holds none. */
export async function upstreamSessionId(sessionId: string, server: string): Promise<string | null | undefined> {
	return (await upstreamSessionIds(sessionId))[server];
}
