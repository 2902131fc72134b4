import { describe, expect, it } from "vitest";
import { ActivityMeter } from "../src/session/activity-meter.ts";
import { ManualClock } from "./support/session-object.ts";

const SECOND = 1_000;

function meter() {
	const clock = new ManualClock(0);
	return { clock, meter: new ActivityMeter(() => clock) };
}

describe("the activity meter", () => {
	it("counts nothing while no activity is open, however long that is", () => {
		const { clock, meter: activity } = meter();
		clock.advance(60 * SECOND);
		expect(activity.activeMs).toBe(0);
		activity.enter()();
		clock.advance(60 * SECOND);
		expect(activity.activeMs).toBe(0);
	});

	it("counts an activity from enter to leave, and the open one up to now", () => {
		const { clock, meter: activity } = meter();
		clock.advance(5 * SECOND);
		const leave = activity.enter();
		clock.advance(3 * SECOND);
		expect(activity.activeMs).toBe(3 * SECOND);
		clock.advance(2 * SECOND);
		leave();
		clock.advance(10 * SECOND);
		expect(activity.activeMs).toBe(5 * SECOND);
	});

	it("counts overlapping activities once, and separate ones each", () => {
		const { clock, meter: activity } = meter();
		const first = activity.enter();
		clock.advance(4 * SECOND);
		const second = activity.enter();
		clock.advance(4 * SECOND);
		first();
		clock.advance(4 * SECOND);
		second();
		expect(activity.activeMs).toBe(12 * SECOND);
		clock.advance(100 * SECOND);
		const third = activity.enter();
		clock.advance(1 * SECOND);
		third();
		expect(activity.activeMs).toBe(13 * SECOND);
	});

	it("leaves an activity once however often its leave is called: the others stay open", () => {
		const { clock, meter: activity } = meter();
		const first = activity.enter();
		const second = activity.enter();
		first();
		first();
		clock.advance(7 * SECOND);
		expect(activity.activeMs).toBe(7 * SECOND);
		second();
		clock.advance(7 * SECOND);
		expect(activity.activeMs).toBe(7 * SECOND);
	});
});
