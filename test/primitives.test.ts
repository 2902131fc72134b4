import { describe, expect, it } from "vitest";
import { verifySessionId } from "../src/edge/2025-11-25/session-id.ts";
import { ExpiringMap, keepFound } from "../src/primitives/expiring-map.ts";
import { LapsingSlot } from "../src/primitives/lapsing-slot.ts";
import { once } from "../src/primitives/once.ts";
import { openToken, signToken } from "../src/primitives/signed-token.ts";
import { signWebhook, webhookSignatureHeaders } from "../src/primitives/webhook-signature.ts";
import { verifyApiKey } from "../src/registry/api-key.ts";
import { openRequestState, signRequestState } from "../src/session/2026-07-28/request-state.ts";
import { mintTaskId, openUpstreamTaskId, parseTaskId, upstreamTaskSealer } from "../src/session/tasks/task-ids.ts";

/**
 * Tokens minted before the signed-token helper existed, under this secret:
 * they must stay valid, byte for byte, or every live session, API key and
 * pending round would be refused after a deploy.
 */
const SECRET = "wire-format-secret-0123456789abcdef";
const OLD_SESSION_ID = "gw1.AbCdEfGhIjKlMnOpQrStUvWxYz012345.cQoareibRRk089e77kx62RgrJiOMsOT0nWguDVui2Lc";
const OLD_API_KEY = "mcpgw2_key_AbCdEfGhIjKl.0123456789abcdefghijkl.CqRUUN2Ox61h1Lw3rpG_NZk-8LyXXnPLDZamEGNB7K0";
const OLD_REQUEST_STATE = "RoundIdRoundIdRoundId0.4102444800000.DhBSDEtchfpioMBA_2Y5N_EeNeuQ1x1lEE3Prb6phSY";
const ROUND_OWNER = { keyId: "key_AbCdEfGhIjKl", endpoint: "/mcp/alpha", method: "tools/call", name: "echo" };

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** The other final characters that differ from `last` only in the two bits a 32-byte value leaves unused. */
function sameBytesSpellings(last: string): string[] {
	const index = BASE64URL.indexOf(last);
	return [0, 1, 2, 3].map((low) => BASE64URL[(index & ~3) | low] ?? "").filter((spelling) => spelling !== last);
}

function lastCharacter(token: string, replacement: string): string {
	return `${token.slice(0, -1)}${replacement}`;
}

describe("webhook signatures follow Standard Webhooks", () => {
	it("signs the specification's own example as its libraries do", async () => {
		// The example secret, message and signature of the Standard Webhooks specification.
		const signature = await signWebhook(
			"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
			"msg_p5jXN8AQM9LWM0D4loKWxJek",
			1614265330,
			'{"test": 2432232314}',
		);
		expect(signature).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
	});

	it("signs with a plain secret's UTF-8 bytes, and a changed body or time gets another signature", async () => {
		const headers = await webhookSignatureHeaders("a plain shared secret", "msg_1", 1700000000, "{}");
		expect(headers).toEqual({
			"webhook-id": "msg_1",
			"webhook-timestamp": "1700000000",
			"webhook-signature": expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
		});
		expect(await signWebhook("a plain shared secret", "msg_1", 1700000000, "{ }")).not.toBe(
			headers["webhook-signature"],
		);
		expect(await signWebhook("a plain shared secret", "msg_1", 1700000001, "{}")).not.toBe(
			headers["webhook-signature"],
		);
	});
});

describe("signed tokens keep their wire format", () => {
	it("a session id, an API key and a requestState minted before still verify", async () => {
		expect(await verifySessionId(SECRET, OLD_SESSION_ID)).toBe(true);
		expect(await verifyApiKey(SECRET, OLD_API_KEY)).toBe("key_AbCdEfGhIjKl");
		const now = Date.parse("2026-01-01T00:00:00Z");
		expect(await openRequestState(SECRET, OLD_REQUEST_STATE, ROUND_OWNER, now)).toBe("RoundIdRoundIdRoundId0");
		expect(await signRequestState(SECRET, "RoundIdRoundIdRoundId0", 4102444800000, ROUND_OWNER)).toBe(
			OLD_REQUEST_STATE,
		);
	});

	it("another secret, a changed body, a non-canonical MAC spelling or another owner is refused", async () => {
		expect(await verifySessionId("another-secret-0123456789abcdefghij", OLD_SESSION_ID)).toBe(false);
		expect(await verifySessionId(SECRET, OLD_SESSION_ID.replace("AbCd", "AbCe"))).toBe(false);
		// The last character of a 32-byte MAC carries two unused bits: four spellings decode to the same bytes,
		// and only the one the gateway writes passes.
		for (const spelling of sameBytesSpellings(OLD_SESSION_ID.at(-1) ?? "")) {
			expect(await verifySessionId(SECRET, lastCharacter(OLD_SESSION_ID, spelling))).toBe(false);
		}
		expect(await verifyApiKey(SECRET, OLD_API_KEY.replace("key_AbCd", "key_AbCe"))).toBeNull();
		const now = Date.parse("2026-01-01T00:00:00Z");
		expect(await openRequestState(SECRET, OLD_REQUEST_STATE, { ...ROUND_OWNER, name: "other" }, now)).toBeNull();
		expect(await openRequestState(SECRET, OLD_REQUEST_STATE, ROUND_OWNER, 4102444800000)).toBeNull();
		expect(await openRequestState(SECRET, `${OLD_REQUEST_STATE}.extra`, ROUND_OWNER, now)).toBeNull();
	});

	it("a requestState bound to a call's arguments opens only for those arguments", async () => {
		const now = Date.parse("2026-01-01T00:00:00Z");
		const owner = { ...ROUND_OWNER, arguments: '{"a":1}' };
		const state = await signRequestState(SECRET, "RoundIdRoundIdRoundId0", 4102444800000, owner);
		expect(state).not.toBe(OLD_REQUEST_STATE);
		expect(await openRequestState(SECRET, state, owner, now)).toBe("RoundIdRoundIdRoundId0");
		expect(await openRequestState(SECRET, state, { ...owner, arguments: '{"a":2}' }, now)).toBeNull();
		expect(await openRequestState(SECRET, state, ROUND_OWNER, now)).toBeNull();
		expect(await openRequestState(SECRET, OLD_REQUEST_STATE, owner, now)).toBeNull();
	});

	it("a token is its body, a dot and the MAC of what it covers", async () => {
		const token = await signToken(SECRET, "body.with.dots");
		expect(token).toMatch(/^body\.with\.dots\.[A-Za-z0-9_-]{43}$/);
		expect(await openToken(SECRET, token)).toBe("body.with.dots");
		expect(await openToken(SECRET, "no-dot-at-all")).toBeNull();
		const bound = await signToken(SECRET, "shown", "shown and what it stands for");
		expect(await openToken(SECRET, bound)).toBeNull();
		expect(await openToken(SECRET, bound, (body) => `${body} and what it stands for`)).toBe("shown");
		expect(await openToken(SECRET, bound, () => null)).toBeNull();
	});
});

/** Task ids handed to clients before the one task-id module: a held task's, and upstream tasks' sealed for a scope. */
const PLACE = `${"0".repeat(63)}a`;
const OLD_HELD_TASK_ID = `${PLACE}.AbCdEfGhIjKlMnOpQrStUv`;
const TASK_SCOPE = { keyId: "key_AbCdEfGhIjKl", userPath: "", endpoint: "/mcp/alpha" };
const OLD_UPSTREAM_TASK_ID =
	"up.eyJrIjoia2V5X0FiQ2RFZkdoSWpLbCIsInUiOiIiLCJlIjoiL21jcC9hbHBoYSIsInMiOiJhbHBoYSIsInQiOiJ0YXNrLTEifQ.Arc7vCQGuX2YAkzeCBCr_Kn38Ph2JF7cTjdxCwNJsNM";
const OLD_SESSION_UPSTREAM_TASK_ID =
	"up.eyJrIjoia2V5X0FiQ2RFZkdoSWpLbCIsInUiOiIiLCJlIjoiL21jcC9hbHBoYSIsInMiOiJhbHBoYSIsInQiOiJ0YXNrLTEiLCJwIjoiMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwYSJ9.UQnISsaGusYKGtNtodHqCfUabCnyjhmd8s0HNr-xQ2o";

describe("task ids keep their wire format", () => {
	it("a held task's id names its object's place; upstream tasks' ids sealed before open to the same task, and seal to the same id; any other id is unknown", async () => {
		expect(parseTaskId(OLD_HELD_TASK_ID)).toEqual({ kind: "held", place: PLACE });
		expect(mintTaskId(PLACE)).toMatch(/^0{63}a\.[A-Za-z0-9_-]{22}$/);
		expect(parseTaskId(mintTaskId(PLACE))).toEqual({ kind: "held", place: PLACE });
		for (const unknown of ["task-1", `${PLACE}.short`, `${PLACE.toUpperCase()}.AbCdEfGhIjKlMnOpQrStUv`, ""]) {
			expect(parseTaskId(unknown)).toEqual({ kind: "unknown" });
		}
		const task = { server: "alpha", upstreamTaskId: "task-1" };
		expect(await openUpstreamTaskId(SECRET, TASK_SCOPE, OLD_UPSTREAM_TASK_ID)).toEqual(task);
		expect(await openUpstreamTaskId(SECRET, TASK_SCOPE, OLD_SESSION_UPSTREAM_TASK_ID, PLACE)).toEqual(task);
		expect(await upstreamTaskSealer(SECRET, TASK_SCOPE, { server: "alpha" })("task-1")).toBe(OLD_UPSTREAM_TASK_ID);
		expect(await upstreamTaskSealer(SECRET, TASK_SCOPE, { server: "alpha", place: PLACE })("task-1")).toBe(
			OLD_SESSION_UPSTREAM_TASK_ID,
		);
		expect(parseTaskId(OLD_UPSTREAM_TASK_ID)).toEqual({ kind: "upstream" });
	});

	it("an upstream task id opens nowhere else: another scope, another session object, none, a changed id or another secret", async () => {
		expect(await openUpstreamTaskId(SECRET, { ...TASK_SCOPE, keyId: "key_other" }, OLD_UPSTREAM_TASK_ID)).toBeNull();
		expect(await openUpstreamTaskId(SECRET, { ...TASK_SCOPE, endpoint: "/mcp" }, OLD_UPSTREAM_TASK_ID)).toBeNull();
		expect(await openUpstreamTaskId(SECRET, { ...TASK_SCOPE, userPath: "alice" }, OLD_UPSTREAM_TASK_ID)).toBeNull();
		expect(await openUpstreamTaskId(SECRET, TASK_SCOPE, OLD_UPSTREAM_TASK_ID, PLACE)).toBeNull();
		expect(await openUpstreamTaskId(SECRET, TASK_SCOPE, OLD_SESSION_UPSTREAM_TASK_ID)).toBeNull();
		expect(await openUpstreamTaskId(SECRET, TASK_SCOPE, OLD_UPSTREAM_TASK_ID.replace("eyJr", "eyJs"))).toBeNull();
		expect(
			await openUpstreamTaskId("another-secret-0123456789abcdefghij", TASK_SCOPE, OLD_UPSTREAM_TASK_ID),
		).toBeNull();
		expect(await openUpstreamTaskId(SECRET, TASK_SCOPE, OLD_UPSTREAM_TASK_ID.slice(3))).toBeNull();
		expect(await openUpstreamTaskId(SECRET, TASK_SCOPE, OLD_HELD_TASK_ID)).toBeNull();
	});
});

describe("the expiring map", () => {
	it("concurrent loads of one key in one flight share one call; a value is kept for its time, then loaded again", async () => {
		let now = 1_000;
		const map = new ExpiringMap<string>({ maxEntries: 4, now: () => now });
		const flight = {};
		let calls = 0;
		const loader = async () => `value-${++calls}`;
		const values = await Promise.all(Array.from({ length: 8 }, () => map.load("a", loader, () => 100, flight)));
		expect(values).toEqual(Array(8).fill("value-1"));
		now += 99;
		expect(await map.load("a", loader, () => 100, flight)).toBe("value-1");
		now += 1;
		expect(map.get("a")).toBeUndefined();
		expect(await map.load("a", loader, () => 100, flight)).toBe("value-2");
		expect(calls).toBe(2);
	});

	it("a load under way is never awaited by another flight: each loads for itself, and what settles is shared by all", async () => {
		const map = new ExpiringMap<string>({ maxEntries: 4 });
		const [first, second] = [{}, {}];
		const releases: Array<() => void> = [];
		let calls = 0;
		const gated = () =>
			new Promise<string>((resolve) => {
				const call = ++calls;
				releases.push(() => resolve(`value-${call}`));
			});
		const a = map.load("a", gated, () => 60_000, first);
		const alsoA = map.load("a", gated, () => 60_000, first);
		const b = map.load("a", gated, () => 60_000, second);
		// One load per flight, not one per isolate: the second flight does not wait on the first's I/O.
		expect(calls).toBe(2);
		releases[1]?.();
		expect(await b).toBe("value-2");
		releases[0]?.();
		expect(await a).toBe("value-1");
		expect(await alsoA).toBe("value-1");
		// Settled, the value is anyone's: a third flight reads it from memory.
		expect(await map.load("a", gated, () => 60_000, {})).toBe("value-1");
		expect(calls).toBe(2);
	});

	it("an absence (keepFound) and a rejection leave nothing behind", async () => {
		const map = new ExpiringMap<string | null>({ maxEntries: 4 });
		const flight = {};
		let calls = 0;
		const counted = (value: string | null) => async () => {
			calls++;
			return value;
		};
		expect(await map.load("gone", counted(null), keepFound(60_000), flight)).toBeNull();
		expect(await map.load("gone", counted("here"), keepFound(60_000), flight)).toBe("here");
		expect(calls).toBe(2);
		await expect(map.load("failing", () => Promise.reject(new Error("no")), keepFound(60_000), flight)).rejects.toThrow(
			"no",
		);
		expect(map.size).toBe(1);
		expect(await map.load("failing", async () => "now", keepFound(0), flight)).toBe("now");
		expect(map.size).toBe(1);
	});

	it("is bounded: past its size the entry written longest ago goes first", () => {
		const map = new ExpiringMap<number>({ maxEntries: 2 });
		map.set("first", 1, 60_000);
		map.set("second", 2, 60_000);
		map.set("first", 10, 60_000);
		map.set("third", 3, 60_000);
		expect(map.size).toBe(2);
		expect(map.get("second")).toBeUndefined();
		expect(map.get("first")).toBe(10);
		expect(map.get("third")).toBe(3);
	});
});

describe("once", () => {
	it("runs its action once, however often it is called", () => {
		let runs = 0;
		const run = once(() => runs++);
		run();
		run();
		expect(runs).toBe(1);
	});
});

describe("the lapsing slot", () => {
	it("holds one holder until it lets go or its deadline passes; then another takes it, and the lapsed holder holds nothing", () => {
		let now = 1_000;
		const slot = new LapsingSlot(() => now);
		const first = slot.take(100);
		expect(first?.current).toBe(true);
		expect(slot.take(100)).toBeNull();
		now += 99;
		expect(first?.renew(100)).toBe(true);
		now += 99;
		expect(slot.take(100)).toBeNull();
		now += 1;
		// Past its deadline, and nothing settled it: a new holder takes the slot over.
		const second = slot.take(100);
		expect(second?.current).toBe(true);
		expect(first?.current).toBe(false);
		expect(first?.renew(1_000)).toBe(false);
		first?.release();
		expect(second?.current).toBe(true);
		expect(slot.take(100)).toBeNull();
		second?.release();
		expect(second?.current).toBe(false);
		expect(slot.take(100)?.current).toBe(true);
	});

	it("a holder past its deadline that nobody took over is still the holder", () => {
		let now = 0;
		const slot = new LapsingSlot(() => now);
		const hold = slot.take(10);
		now += 50;
		expect(hold?.current).toBe(true);
		expect(hold?.renew(10)).toBe(true);
		expect(slot.take(10)).toBeNull();
	});
});
