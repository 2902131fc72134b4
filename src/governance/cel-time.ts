import { type CelFunc, CelScalar, celMethod, objectType } from "@bufbuild/cel";
import { type Timestamp, TimestampSchema, timestampMs } from "@bufbuild/protobuf/wkt";

/**
 * CEL's timestamp accessors (`getHours`, `getDayOfWeek`, ...) with the same
 * meaning as `@bufbuild/cel`'s, which they replace in the policies'
 * environment: that one builds an `Intl.DateTimeFormat` on every call with a
 * time zone, about 230 µs each, and "working hours" policies call it on
 * every tool of every list. Here a zone's format is made once per isolate,
 * and "UTC" needs none. The CEL spec's conformance data checks both
 * (test/policies.test.ts).
 */

const TIMESTAMP = objectType(TimestampSchema);
const { INT, STRING } = CelScalar;
const DAY_MS = 86_400_000;

/** Time zone formats made so far; a policy names a handful, the bound keeps a flood of names out. */
const formats = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATS = 64;

/** The wall-clock time of `timestamp` in `zone` (absent: UTC), as a Date to be read with its UTC getters. */
function wallClock(timestamp: Timestamp, zone: string | undefined): Date {
	const ms = timestampMs(timestamp);
	if (zone === undefined || zone === "UTC") return new Date(ms);
	// A fixed offset, `+02:00` or `-05:30` (the sign optional), or else an IANA zone name.
	const offset = /^([+-]?)(\d\d):(\d\d)$/.exec(zone);
	if (offset) {
		const minutes = Number(offset[2]) * 60 + Number(offset[3]);
		return new Date(ms + (offset[1] === "-" ? -minutes : minutes) * 60_000);
	}
	const parts: Record<string, number> = {};
	for (const part of formatFor(zone).formatToParts(ms)) parts[part.type] = Number(part.value);
	const { year, month, day, hour, minute, second } = parts;
	if ([year, month, day, hour, minute, second].some((value) => value === undefined || Number.isNaN(value))) {
		throw new Error(`cannot convert a timestamp to the time zone ${zone}`);
	}
	return new Date(Date.UTC(year ?? 0, (month ?? 1) - 1, day, hour, minute, second, ms - Math.floor(ms / 1000) * 1000));
}

function formatFor(zone: string): Intl.DateTimeFormat {
	let format = formats.get(zone);
	if (!format) {
		// Throws a RangeError for a zone that does not exist, which CEL reports as an evaluation error.
		format = new Intl.DateTimeFormat("en-US", {
			hourCycle: "h23",
			timeZone: zone,
			year: "numeric",
			month: "numeric",
			day: "numeric",
			hour: "numeric",
			minute: "numeric",
			second: "numeric",
		});
		if (formats.size >= MAX_FORMATS) formats.clear();
		formats.set(zone, format);
	}
	return format;
}

function dayOfYear(date: Date): number {
	return Math.floor((date.getTime() - Date.UTC(date.getUTCFullYear(), 0, 1)) / DAY_MS);
}

const ACCESSORS: ReadonlyArray<[string, (date: Date) => number]> = [
	["getFullYear", (date) => date.getUTCFullYear()],
	["getMonth", (date) => date.getUTCMonth()],
	["getDate", (date) => date.getUTCDate()],
	["getDayOfMonth", (date) => date.getUTCDate() - 1],
	["getDayOfWeek", (date) => date.getUTCDay()],
	["getDayOfYear", dayOfYear],
	["getHours", (date) => date.getUTCHours()],
	["getMinutes", (date) => date.getUTCMinutes()],
	["getSeconds", (date) => date.getUTCSeconds()],
	["getMilliseconds", (date) => date.getUTCMilliseconds()],
];

/** The accessors, each with and without a time zone argument. */
export const TIMESTAMP_ACCESSORS: CelFunc[] = ACCESSORS.flatMap(([name, read]) => [
	celMethod(name, TIMESTAMP, [], INT, function () {
		return BigInt(read(wallClock(this.message, undefined)));
	}),
	celMethod(name, TIMESTAMP, [STRING], INT, function (zone) {
		return BigInt(read(wallClock(this.message, zone)));
	}),
]);
