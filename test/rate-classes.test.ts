import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../src/env.ts";
import { admin, createKey, gatewayFetch } from "./support/gateway.ts";
import { gatewayWith, ORIGIN } from "./support/oauth-client.ts";

/**
 * Cheap authenticated requests: a DELETE without a session is refused as a
 * bad request (400) right after authentication and the rate limit, so a
 * status other than 400 is the limit speaking.
 */
const deleteWithout = (bearer: string, fetcher: (path: string, init: RequestInit) => Promise<Response>) =>
	fetcher("/mcp", { method: "DELETE", headers: { authorization: `Bearer ${bearer}` } });

const throughTestWorker = (path: string, init: RequestInit) => gatewayFetch(path, init);

/** A rate-limiting binding that records the keys it is asked about, and answers as `real` does (or always yes). */
function recordingLimiter(real?: RateLimit): RateLimit & { asked: string[] } {
	const asked: string[] = [];
	return {
		asked,
		limit: (options) => {
			asked.push(options.key);
			return real ? real.limit(options) : Promise.resolve({ success: true });
		},
	};
}

/** The gateway app under `overrides` of the test Worker's env, as the path-taking fetch the helpers use. */
function gatewayUnder(overrides: Partial<Env>) {
	const fetcher = gatewayWith(overrides);
	return (path: string, init: RequestInit) => fetcher(`${ORIGIN}${path}`, init);
}

afterEach(() => {
	vi.restoreAllMocks();
});

describe("rate classes: which binding counts a key's requests", () => {
	it("a standard key reaches 429 at KEY_RATE_LIMITER's limit, while a high key sending as many requests is never refused", async () => {
		const standard = await createKey();
		const high = await createKey({ rateClass: "high" });
		let standardPassed = 0;
		let highPassed = 0;
		let limited: Response | undefined;
		// Standard's limit is 400 per 60 s window (800 when a window rolls over mid-test); high's is 2,000.
		for (let i = 0; i < 801 && !limited; i++) {
			const response = await deleteWithout(standard.key, throughTestWorker);
			if (response.status === 429) limited = response;
			else {
				expect(response.status).toBe(400);
				standardPassed++;
			}
			expect((await deleteWithout(high.key, throughTestWorker)).status).toBe(400);
			highPassed++;
		}
		expect(limited).toBeDefined();
		expect(standardPassed).toBeGreaterThanOrEqual(400);
		const { error } = (await (limited as Response).json()) as { error: { message: string } };
		expect(error.message).toContain("rate class standard");
		// The high key sent at least as many, and more after the standard one was refused.
		for (let i = 0; i < 50; i++) {
			expect((await deleteWithout(high.key, throughTestWorker)).status).toBe(400);
			highPassed++;
		}
		expect(highPassed).toBeGreaterThan(standardPassed);
		// About 1,700 requests one after another: the time a busy machine takes, not a figure of the gateway's.
	}, 90_000);

	it("an unlimited key is never limited: 900 requests pass, where a standard key is refused after 400", async () => {
		// One binding for both keys that allows 400 requests per key, as KEY_RATE_LIMITER does in a window.
		const counted = new Map<string, number>();
		const limiter = recordingLimiter({
			limit: async ({ key }) => {
				counted.set(key, (counted.get(key) ?? 0) + 1);
				return { success: (counted.get(key) ?? 0) <= 400 };
			},
		});
		const fetcher = gatewayUnder({ KEY_RATE_LIMITER: limiter });
		const standard = await createKey();
		const unlimited = await createKey({ rateClass: "unlimited" });
		let standardPassed = 0;
		let refused: Response | undefined;
		for (let i = 0; i < 900 && !refused; i++) {
			const response = await deleteWithout(standard.key, fetcher);
			if (response.status === 429) refused = response;
			else {
				expect(response.status).toBe(400);
				standardPassed++;
			}
		}
		// The binding is asked without waiting: its first "no" (the 401st request) refuses the request after it.
		expect(refused?.status).toBe(429);
		expect(standardPassed).toBeGreaterThanOrEqual(400);
		expect(standardPassed).toBeLessThanOrEqual(402);
		for (let i = 0; i < 900; i++) {
			expect((await deleteWithout(unlimited.key, fetcher)).status).toBe(400);
		}
		expect(limiter.asked.filter((key) => key === `key:${unlimited.id}`)).toEqual([]);
	}, 90_000);

	it("each class asks only its own binding, and an unlimited key asks none", async () => {
		const standardLimiter = recordingLimiter();
		const highLimiter = recordingLimiter();
		const fetcher = gatewayUnder({ KEY_RATE_LIMITER: standardLimiter, KEY_RATE_LIMITER_HIGH: highLimiter });
		const standard = await createKey();
		const high = await createKey({ rateClass: "high" });
		const unlimited = await createKey({ rateClass: "unlimited" });
		for (const key of [standard, high, unlimited]) {
			for (let i = 0; i < 3; i++) expect((await deleteWithout(key.key, fetcher)).status).toBe(400);
		}
		expect(standardLimiter.asked).toEqual(Array(3).fill(`key:${standard.id}`));
		expect(highLimiter.asked).toEqual(Array(3).fill(`key:${high.id}`));
	});

	it("a high key refused by its binding gets 429 naming its class; a standard key of the same isolate is not held by that refusal", async () => {
		const highLimiter: RateLimit = { limit: async () => ({ success: false }) };
		const standardLimiter = recordingLimiter();
		const fetcher = gatewayUnder({ KEY_RATE_LIMITER: standardLimiter, KEY_RATE_LIMITER_HIGH: highLimiter });
		const high = await createKey({ rateClass: "high" });
		const standard = await createKey();
		// The binding is asked without waiting: its "no" refuses from the next request on.
		expect((await deleteWithout(high.key, fetcher)).status).toBe(400);
		const refused = await deleteWithout(high.key, fetcher);
		expect(refused.status).toBe(429);
		expect(refused.headers.get("retry-after")).toBe("60");
		const { error } = (await refused.json()) as { error: { message: string; data?: { kind?: string } } };
		expect(error.data?.kind).toBe("rate_limited");
		expect(error.message).toContain("rate class high");
		expect((await deleteWithout(standard.key, fetcher)).status).toBe(400);
	});

	it("a class whose binding the deployment lacks counts against standard's, with one warning per isolate", async () => {
		const warned = vi.spyOn(console, "warn");
		const standardLimiter = recordingLimiter();
		const fetcher = gatewayUnder({ KEY_RATE_LIMITER: standardLimiter, KEY_RATE_LIMITER_HIGH: undefined });
		const high = await createKey({ rateClass: "high" });
		for (let i = 0; i < 3; i++) expect((await deleteWithout(high.key, fetcher)).status).toBe(400);
		expect(standardLimiter.asked).toEqual(Array(3).fill(`key:${high.id}`));
		const lines = warned.mock.calls
			.map(([line]) => (typeof line === "string" && line.startsWith("{") ? JSON.parse(line) : null))
			.filter((entry) => entry?.event === "rate_class_binding_missing");
		expect(lines).toEqual([
			expect.objectContaining({ rateClass: "high", binding: "KEY_RATE_LIMITER_HIGH", fallback: "standard" }),
		]);
		expect(lines[0].message).toContain("[[ratelimits]]");
	});
});

describe("rate classes: the admin API and the published records", () => {
	it("a key is standard unless it names a class; the class is shown, published to KV, and an unknown one is a 400 naming the classes", async () => {
		const plain = await admin("POST", "/keys", {});
		expect(plain.status).toBe(201);
		const plainRecord = (await plain.json()) as { id: string; rateClass: string };
		expect(plainRecord.rateClass).toBe("standard");
		const high = (await (await admin("POST", "/keys", { rateClass: "high" })).json()) as { id: string };
		const { keys } = (await (await admin("GET", "/keys")).json()) as {
			keys: Array<{ id: string; rateClass: string }>;
		};
		expect(keys.find((key) => key.id === high.id)?.rateClass).toBe("high");
		expect(await env.REGISTRY_KV.get(`key/${high.id}`, "json")).toMatchObject({ id: high.id, rateClass: "high" });

		const refused = await admin("POST", "/keys", { rateClass: "bulk" });
		expect(refused.status).toBe(400);
		const { error } = (await refused.json()) as { error: { message: string } };
		expect(error.message).toContain("rateClass");
		expect(error.message).toContain('"standard", "high", "unlimited"');
	});
});
