import { createRoute } from "@hono/zod-openapi";
import { GatewayError } from "../../mcp/gateway-error.ts";
import { registryStub } from "../../registry/registry-stub.ts";
import { lastHourCalls, WINDOW_MINUTES } from "../../telemetry/call-counts.ts";
import { sessionStub } from "../2025-11-25/session-id.ts";
import { audit } from "../admin-audit.ts";
import { type AdminRouter, adminRouter, answer, withRefusals } from "./kit.ts";

const tags = ["operations"];

const sessionStats = createRoute({
	method: "get",
	path: "/session-stats",
	tags,
	summary: "What one session has cost",
	description:
		"Storage operations, registry reads, upstream requests and the wall time its Durable Object was kept active. The session ID is sent in `Mcp-Session-Id`, as clients do; only its digest is used.",
	parameters: [{ name: "Mcp-Session-Id", in: "header", required: true, schema: { type: "string" } }],
	responses: withRefusals({ 200: answer("The session's counters.") }),
});

const registryStats = createRoute({
	method: "get",
	path: "/registry-stats",
	tags,
	summary: "Requests the registry of record served",
	description: "Since its instance started: only admin work, in steady state.",
	responses: withRefusals({ 200: answer("`{ reads }`.") }),
});

const sync = createRoute({
	method: "post",
	path: "/sync",
	tags,
	summary: "Publish the whole registry to Workers KV again",
	description:
		"After a KV namespace was replaced or emptied, or to repair it. Answers how many records were published and how many still wait for a retry.",
	responses: withRefusals({ 200: answer("What was published, and what waits for a retry.") }),
});

const callCounts = createRoute({
	method: "get",
	path: "/call-counts",
	tags,
	summary: "Tool calls and errors per server over the last hour",
	description:
		"As the gateway counts them for the dashboard: each edge isolate sends its counts at most every 10 s, after the answers, so the last seconds may be missing, and an isolate evicted before sending loses its own. Errors are every outcome but `ok`.",
	responses: withRefusals({
		200: answer("`{ windowMinutes, servers: [{ server, calls, errors }] }`, busiest first."),
	}),
});

/** Figures and repairs: a session's cost, the registry's reads, publishing the registry again. */
export function operationRoutes(): AdminRouter {
	const router = adminRouter();

	router.openapi(sessionStats, async (c) => {
		const sessionId = c.req.header("mcp-session-id");
		if (!sessionId) throw new GatewayError("bad_request", "Bad Request: send the session's Mcp-Session-Id header.");
		const stub = await sessionStub(c.env, sessionId);
		return c.json(await stub.stats());
	});

	router.openapi(registryStats, async (c) => c.json({ reads: await registryStub(c.env).readCount() }));

	router.openapi(callCounts, async (c) =>
		c.json({ windowMinutes: WINDOW_MINUTES, servers: (await lastHourCalls(c.env)) ?? [] }),
	);

	router.openapi(sync, async (c) => {
		const result = await registryStub(c.env).sync();
		audit("registry.synced", "kv");
		return c.json(result);
	});

	return router;
}
