import { describe, expect, it } from "vitest";
import { GatewayError } from "../src/mcp/gateway-error.ts";
import { ListenWindows, MAX_OPEN_WINDOWS } from "../src/session/streams/listen-windows.ts";
import { ManualClock } from "./support/session-object.ts";

const FLOOR = 1_000;
const WINDOW = 25_000;

function paced() {
	const clock = new ManualClock(0);
	const windows = new ListenWindows(() => clock, { floorMs: FLOOR, windowMs: WINDOW });
	let n = 0;
	/** A transparent window on `server` that its upstream ends at once, with `retryMs`; returns the wait after it. */
	const endsAtOnce = (server: string, retryMs: number | null) => {
		const window = `w${++n}`;
		windows.open(window, WINDOW, true);
		windows.listens(window, [server]);
		windows.ended(window, { by: "upstream", server, retryMs });
		return windows.wait(server);
	};
	return { clock, windows, endsAtOnce };
}

describe("pacing of a member's GET stream that ends early", () => {
	it("waits the upstream's retry, twice as long each time it ends early again, up to one listening window", () => {
		const { clock, endsAtOnce } = paced();
		const waits: number[] = [];
		for (let i = 0; i < 7; i++) {
			const wait = endsAtOnce("a", 2_000);
			waits.push(wait);
			clock.advance(wait);
		}
		expect(waits).toEqual([2_000, 4_000, 8_000, 16_000, WINDOW, WINDOW, WINDOW]);
	});

	it("never waits less than SSE_RETRY_MS, whatever retry the upstream gives (none, or 0)", () => {
		expect(paced().endsAtOnce("a", null)).toBe(FLOOR);
		expect(paced().endsAtOnce("a", 0)).toBe(FLOOR);
		expect(paced().endsAtOnce("a", 10)).toBe(FLOOR);
	});

	it("honours a retry longer than a window, up to ten minutes", () => {
		expect(paced().endsAtOnce("a", 60_000)).toBe(60_000);
		expect(paced().endsAtOnce("a", 10 ** 12)).toBe(10 * 60_000);
	});

	it("a window that lives its whole time starts the doubling over", () => {
		const { clock, windows, endsAtOnce } = paced();
		clock.advance(endsAtOnce("a", 2_000));
		clock.advance(endsAtOnce("a", 2_000));
		windows.open("lived", WINDOW, true);
		windows.listens("lived", ["a"]);
		clock.advance(WINDOW);
		windows.ended("lived", { by: "time" });
		expect(windows.wait("a")).toBe(0);
		expect(endsAtOnce("a", 2_000)).toBe(2_000);
	});

	it("early ends a window apart are not a stream that keeps ending: each waits only the retry", () => {
		const { clock, endsAtOnce } = paced();
		for (let i = 0; i < 4; i++) {
			expect(endsAtOnce("a", 2_000)).toBe(2_000);
			clock.advance(WINDOW);
		}
	});

	it("a client leaving changes nothing in the pacing; each member is paced on its own", () => {
		const { windows, endsAtOnce } = paced();
		endsAtOnce("a", 2_000);
		windows.open("left", WINDOW, true);
		windows.listens("left", ["a"]);
		windows.ended("left", { by: "client" });
		expect(windows.wait("a")).toBe(2_000);
		expect(windows.wait("b")).toBe(0);
	});

	it("a member's first expired session is listened to again at once; one that keeps expiring is paced", () => {
		const { clock, windows } = paced();
		windows.expired("a");
		expect(windows.wait("a")).toBe(0);
		clock.advance(10);
		windows.expired("a");
		expect(windows.wait("a")).toBe(FLOOR);
	});
});

describe("windows counted open per session", () => {
	it(`${MAX_OPEN_WINDOWS} windows at once; one more is refused with 429 until one ends or its end is long overdue`, () => {
		const { clock, windows } = paced();
		for (let i = 0; i < MAX_OPEN_WINDOWS; i++) windows.open(`w${i}`, WINDOW, false);
		const refused = (() => {
			try {
				windows.open("extra", WINDOW, false);
			} catch (error) {
				return error;
			}
		})();
		expect(refused).toBeInstanceOf(GatewayError);
		expect((refused as GatewayError).status).toBe(429);
		expect((refused as GatewayError).headers["retry-after"]).toBe(String(WINDOW / 1000));
		windows.ended("w0", { by: "client" });
		windows.open("extra", WINDOW, false);
		expect(windows.size).toBe(MAX_OPEN_WINDOWS);
		// Edges that never said their windows ended (gone away): given back after the planned end and a grace.
		clock.advance(WINDOW + 5_001);
		windows.open("later", WINDOW, false);
		expect(windows.size).toBe(1);
	});

	it("a transparent window ends with its upstream's stream; an aggregate one outlives a member's", () => {
		const { windows } = paced();
		windows.open("t", WINDOW, true);
		windows.listens("t", ["a"]);
		windows.open("g", WINDOW, false);
		windows.listens("g", ["a", "b"]);
		windows.ended("t", { by: "upstream", server: "a", retryMs: null });
		windows.ended("g", { by: "upstream", server: "b", retryMs: null });
		expect(windows.size).toBe(1);
		windows.ended("g", { by: "time" });
		expect(windows.size).toBe(0);
		// "a" ended early in one window but lived the whole of another: no longer paced; "b" still is.
		expect(windows.wait("a")).toBe(0);
		expect(windows.wait("b")).toBe(FLOOR);
	});
});
