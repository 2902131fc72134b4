import { env } from "cloudflare:test";
import type { Env } from "../../src/env.ts";

/** What requests through a counting env touched. */
export interface TouchCounts {
	/** Durable Object stubs made (`namespace.get`), in every namespace. */
	durableObjects: number;
	/** Calls made on those stubs (RPC methods and `fetch`): each one wakes its object. */
	durableObjectCalls: number;
	/** Reads of the registry's KV namespace. */
	kvReads: number;
}

/**
 * The test Worker's env with every Durable Object namespace and the registry's
 * KV counted, for `createApp().fetch(request, env, ctx)`: what a request
 * touched, read straight from the bindings it used. An object is woken by a
 * call on its stub, not by the stub (`namespace.get` alone wakes nothing), so
 * "wakes no object" is `durableObjectCalls === 0`.
 */
export function countingEnv(): { counts: TouchCounts; env: Env } {
	const counts: TouchCounts = { durableObjects: 0, durableObjectCalls: 0, kvReads: 0 };
	const calls = <T extends object>(stub: T): T =>
		new Proxy(stub, {
			get(object, property) {
				const value = Reflect.get(object, property) as unknown;
				if (typeof value !== "function") return value;
				return (...args: unknown[]) => {
					counts.durableObjectCalls++;
					// Reflect.apply: an RPC method is a stub itself, whose own `apply` would be sent as a call.
					return Reflect.apply(value as (...a: unknown[]) => unknown, object, args);
				};
			},
		});
	const counted = <T extends object>(target: T, counter: "durableObjects" | "kvReads"): T =>
		new Proxy(target, {
			get(object, property) {
				const value = Reflect.get(object, property) as unknown;
				if (typeof value !== "function") return value;
				if (property === "get") {
					return (...args: unknown[]) => {
						counts[counter]++;
						const got = (value as (...a: unknown[]) => unknown).apply(object, args);
						return counter === "durableObjects" ? calls(got as object) : got;
					};
				}
				return (value as (...a: unknown[]) => unknown).bind(object);
			},
		});
	return {
		counts,
		env: {
			...env,
			SESSIONS: counted(env.SESSIONS, "durableObjects"),
			REGISTRY: counted(env.REGISTRY, "durableObjects"),
			KEY_SESSIONS: counted(env.KEY_SESSIONS, "durableObjects"),
			VAULTS: counted(env.VAULTS, "durableObjects"),
			CALL_COUNTS: counted(env.CALL_COUNTS, "durableObjects"),
			REGISTRY_KV: counted(env.REGISTRY_KV, "kvReads"),
		},
	};
}
