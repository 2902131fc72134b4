import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { OTEL_VARIABLES } from "../src/telemetry/otel-config.ts";
import { telemetryFor } from "../src/telemetry/telemetry.ts";

/** The gateway project's Worker, as every test but the telemetry project's sees it. */
describe("Telemetry in the gateway test project", () => {
	it("is off: no OTEL_* endpoint reaches the test Worker, whatever a local .dev.vars says", () => {
		const set = OTEL_VARIABLES.filter((name) => {
			const value = (env as Record<string, unknown>)[name];
			return typeof value === "string" && value !== "" && name.includes("ENDPOINT");
		});
		expect(set).toEqual([]);
		expect(telemetryFor(env).enabled).toBe(false);
	});
});
