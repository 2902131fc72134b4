/**
 * Counts every request the gateway makes to its Durable Objects, for
 * `npm run bench`. No counter of the gateway sees them all: `session-stats`
 * answers for one 2025 session (by its id), `registry-stats` for the registry
 * only; a 2026-07-28 request that reached a SessionDO, or a key's
 * KeySessionsDO, would show in neither.
 *
 * The benchmark runs the built gateway behind a generated entry module that
 * imports it and this file (transpiled next to it): the `env` the edge Worker
 * and each object receive is wrapped so that every call made on a Durable
 * Object stub (an RPC method) is counted by class and method, and each class
 * counts its alarms and the `fetch` requests it receives. A `fetch` is counted
 * where it arrives, not at the stub: the connectors' upstream fetch reaches its
 * ConnectorDO through the `env` of `cloudflare:workers` (src/connectors/connector-fetch.ts),
 * which no wrapper of a handler's `env` sees. `GET /__bench/durable-object-requests` answers
 * the counts so far. The counting costs a property lookup and a closure per
 * call; the gateway's own code runs unchanged.
 *
 * Minimal local types, as in scripts/bench/floor/: no `cloudflare:workers` import.
 */

/** The path the generated entry answers with the counts (never forwarded to the gateway). */
export const COUNTS_PATH = "/__bench/durable-object-requests";

/** What the counts endpoint answers: calls by `Class.method` (alarms as `Class.alarm`). */
export type DurableObjectRequestCounts = Record<string, number>;

interface Handler {
	fetch(request: Request, env: object, ctx: unknown): Promise<Response> | Response;
}

type ObjectClass = new (ctx: unknown, env: object) => object;

/** The built gateway module, as the generated entry imports it. */
export type GatewayModule = Record<string, unknown> & { default: Handler };

const counts = new Map<string, number>();

function count(name: string): void {
	counts.set(name, (counts.get(name) ?? 0) + 1);
}

/** A stub whose method calls are counted; properties (`id`, `name`) read through. */
function countingStub(stub: object, className: string): object {
	return new Proxy(stub, {
		get(target, property) {
			const value: unknown = Reflect.get(target, property);
			// `then` is looked up by `await`: it is not a call to the object.
			if (typeof value !== "function" || typeof property !== "string" || property === "then") return value;
			return (...args: unknown[]) => {
				// A `fetch` is counted where it arrives. Either way the stub's own method runs on the stub itself.
				if (property !== "fetch") count(`${className}.${property}`);
				return Reflect.apply(value, target, args);
			};
		},
	});
}

/** A namespace whose `get`/`getByName` hand out counting stubs; everything else passes through. */
function countingNamespace(namespace: object, className: string): object {
	return new Proxy(namespace, {
		get(target, property) {
			const value: unknown = Reflect.get(target, property);
			if (typeof value !== "function") return value;
			if (property === "get" || property === "getByName") {
				return (...args: unknown[]) => countingStub(Reflect.apply(value, target, args) as object, className);
			}
			return (...args: unknown[]) => Reflect.apply(value, target, args);
		},
	});
}

/**
 * Wraps the built gateway: a fetch handler that answers the counts at
 * COUNTS_PATH and passes everything else to the gateway's own, and a counting
 * subclass of each Durable Object class. `bindings` maps each namespace
 * binding of the gateway's wrangler.toml to its class name.
 */
export function countDurableObjectRequests(
	gateway: GatewayModule,
	bindings: Record<string, string>,
): { handler: Handler; classes: Record<string, ObjectClass> } {
	// One wrapped env per env object: the gateway caches its settings by env identity.
	const wrapped = new WeakMap<object, object>();
	const countingEnv = (env: object): object => {
		let proxy = wrapped.get(env);
		if (!proxy) {
			const namespaces = new Map<string, object>();
			proxy = new Proxy(env, {
				get(target, property) {
					const value: unknown = Reflect.get(target, property);
					const className = typeof property === "string" ? bindings[property] : undefined;
					if (className === undefined || typeof value !== "object" || value === null) return value;
					let namespace = namespaces.get(property as string);
					if (!namespace) {
						namespace = countingNamespace(value, className);
						namespaces.set(property as string, namespace);
					}
					return namespace;
				},
			});
			wrapped.set(env, proxy);
		}
		return proxy;
	};

	const handler: Handler = {
		fetch(request, env, ctx) {
			if (request.method === "GET" && request.url.endsWith(COUNTS_PATH)) {
				return Response.json(Object.fromEntries(counts) satisfies DurableObjectRequestCounts);
			}
			return gateway.default.fetch(request, countingEnv(env), ctx);
		},
	};

	const classes: Record<string, ObjectClass> = {};
	for (const className of new Set(Object.values(bindings))) {
		const Base = gateway[className];
		if (typeof Base !== "function") throw new Error(`the gateway exports no Durable Object class ${className}`);
		const BaseClass = Base as ObjectClass;
		const Counted = class extends BaseClass {
			constructor(ctx: unknown, env: object) {
				super(ctx, countingEnv(env));
			}
		};
		for (const handler of ["alarm", "fetch"]) {
			const own: unknown = BaseClass.prototype && Reflect.get(BaseClass.prototype, handler);
			if (typeof own !== "function") continue;
			Object.defineProperty(Counted.prototype, handler, {
				value(this: object, ...args: unknown[]) {
					count(`${className}.${handler}`);
					return Reflect.apply(own, this, args);
				},
				writable: true,
				configurable: true,
			});
		}
		Object.defineProperty(Counted, "name", { value: className });
		classes[className] = Counted;
	}
	return { handler, classes };
}
