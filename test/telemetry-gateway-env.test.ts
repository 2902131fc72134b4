import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { telemetryFor } from "../src/telemetry/telemetry.ts";
import { eventually } from "./support/eventually.ts";
import { gatewayFetch } from "./support/gateway.ts";
import { GATEWAY_OTLP_TENANT, otlpRequests, resetOtlp } from "./support/otlp.ts";

beforeEach(async () => {
	await resetOtlp(GATEWAY_OTLP_TENANT);
});

describe("The telemetry project's gateway", () => {
	it("exports to the receiver's gateway tenant: the test Worker's own env (edge and Durable Objects) points there", async () => {
		const telemetry = telemetryFor(env);
		expect(telemetry.enabled).toBe(true);
		telemetry.tracer.startSpan("probe").end();
		const exports: Promise<unknown>[] = [];
		telemetry.flush((promise) => exports.push(promise));
		await Promise.all(exports);
		await eventually(async () => (await otlpRequests(GATEWAY_OTLP_TENANT)).length > 0, "an export");
		expect(await otlpRequests(GATEWAY_OTLP_TENANT)).toEqual([
			expect.objectContaining({ path: "/v1/traces", items: 1 }),
		]);
	});

	it("answers as usual with telemetry on", async () => {
		expect((await gatewayFetch("/healthz")).status).toBe(200);
	});
});
