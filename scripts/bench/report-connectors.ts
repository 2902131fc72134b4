/**
 * The report's connectors section: tools/call to one upstream registered by URL
 * against the same upstream reached through `mcpgw connect --upstream`, and a
 * stdio server's first call in a session against the calls after it
 * (scripts/bench/connector.ts).
 */

import { mean, ms, percentile, perSecond, rate, ratio, signedMs } from "./report-format.ts";
import { countList, pathObjectRequests } from "./report-modern.ts";
import {
	type BenchResults,
	CONNECTOR_TARGET_IDS,
	CONNECTOR_TARGET_LABELS,
	type ConnectorResults,
	type ConnectorThroughput,
} from "./results.ts";

function latencyRow(label: string, samples: readonly number[], extra: string[] = []): string {
	return `| ${label} | ${samples.length} | ${ms(percentile(samples, 50))} | ${ms(percentile(samples, 90))} | ${ms(percentile(samples, 99))} | ${ms(mean(samples))} |${extra.map((cell) => ` ${cell} |`).join("")}`;
}

/** The gateway's Durable Object requests of a window's calls, per call. */
export function objectsPerCall(cell: ConnectorThroughput): number {
	return cell.calls > 0 ? pathObjectRequests(cell.durableObjectRequests) / cell.calls : Number.NaN;
}

/** A window's Durable Object requests per session, the total and by class and method. */
function perSession(counts: Record<string, number>, sessions: number): string {
	if (sessions === 0) return "n/a";
	return `${(pathObjectRequests(counts) / sessions).toFixed(2)} (all, by class and method: ${countList(counts, sessions)})`;
}

function perCall(value: number): string {
	return Number.isFinite(value) ? value.toFixed(2) : "n/a";
}

export function connectorsSection(connectors: BenchResults["connectors"]): string[] {
	const lines = ["", "## Connectors", ""];
	if ("error" in connectors) return [...lines, `Not measured: ${connectors.error}`, ""];
	return [...lines, ...httpPart(connectors), ...stdioPart(connectors)];
}

/** By URL against through a connector: latency, throughput, Durable Object requests. */
function httpPart(c: ConnectorResults): string[] {
	const p = (id: keyof ConnectorResults["latency"], q: number) => percentile(c.latency[id], q);
	const lines = [
		"What a server reached through a connector costs a call, against the same server registered by URL. The bench's",
		'2025 upstream is registered twice more: `bench-by-url` (its URL) and `bench-connector` (`"connector": {}`),',
		"served by a real `mcpgw connect bench-connector --upstream <the upstream's URL>` on this machine, dialled out",
		"to the gateway over a WebSocket (edge → SessionDO → ConnectorDO → the connector → the upstream). One 2025-11-25",
		"session through `/mcp/<server>` on each, with the same raw `fetch` client. `tools/call echo` at concurrency 1,",
		"the calls alternating between the two sessions one by one in an order rotated each call, interleaved with the",
		`rest of each round; ${c.latency.connector.length} calls per session. Latency in ms.`,
		"",
		"| Session | calls | p50 | p90 | p99 | mean | p50 − by URL | p99 − by URL |",
		"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
	];
	for (const id of CONNECTOR_TARGET_IDS) {
		const over = (q: number) => (id === "byUrl" ? "" : signedMs(p(id, q) - p("byUrl", q)));
		lines.push(latencyRow(CONNECTOR_TARGET_LABELS[id], c.latency[id], [over(50), over(99)]));
	}
	lines.push(
		"",
		`**Through a connector − by URL: ${signedMs(p("connector", 50) - p("byUrl", 50))} ms at p50** (${ratio(p("connector", 50) / p("byUrl", 50))}` +
			` the by-URL p50), ${signedMs(p("connector", 99) - p("byUrl", 99))} ms at p99. No goal is set for these figures:`,
		"the issue asks for them measured side by side, not for a bound.",
		"",
		"Throughput (`echo`, calls/s) on the same sessions, each target in turn for the same time per round, and the",
		"gateway's Durable Object requests during those calls, per call (counted as in the 2026-07-28 section: the",
		"benchmark's counter reads and what other sessions do on their own left out; the connector's answers reach the",
		"ConnectorDO as WebSocket messages, not requests, and are not counted).",
		"",
		"| Concurrency | by URL | through a connector | connector ÷ by URL | DO requests per call, by URL | DO requests per call, through a connector | through a connector, by class and method, per call |",
		"| ---: | ---: | ---: | ---: | ---: | ---: | --- |",
	);
	for (const cell of c.throughput) {
		const { byUrl, connector } = cell.results;
		lines.push(
			`| ${cell.concurrency} | ${perSecond(rate(byUrl))} | ${perSecond(rate(connector))} | ${ratio(rate(connector) / rate(byUrl))} | ${perCall(objectsPerCall(byUrl))} | ${perCall(objectsPerCall(connector))} | ${countList(connector.durableObjectRequests, connector.calls)} |`,
		);
	}
	lines.push("");
	return lines;
}

/** A stdio server's first call in a session against the calls after it. */
function stdioPart(c: ConnectorResults): string[] {
	const { sessions } = c.stdio;
	const initialize = sessions.map((s) => s.initializeMs);
	const first = sessions.map((s) => s.firstCallMs);
	const setupAndFirst = sessions.map((s) => s.initializeMs + s.firstCallMs);
	const later = sessions.flatMap((s) => s.laterMs);
	const laterPerSession = sessions[0]?.laterMs.length ?? 0;
	return [
		"A stdio server through a connector: `bench-stdio`, served by `mcpgw connect bench-stdio -- node <server>`",
		`running ${c.stdio.server}.`,
		"The connector starts one child per upstream session, so a new session pays for the child's start (the table",
		"shows in which step). Each round opens new 2025-11-25 sessions through `/mcp/bench-stdio` one after another",
		`(the same raw client) and times the initialize, the first \`tools/call echo\` and ${laterPerSession} calls after it, one at a`,
		`time; then ends the session (DELETE), which ends its child. ${sessions.length} sessions; latency in ms.`,
		"",
		"| Step | samples | p50 | p90 | p99 | mean |",
		"| --- | ---: | ---: | ---: | ---: | ---: |",
		latencyRow("initialize (+ notifications/initialized)", initialize),
		latencyRow("first `tools/call`", first),
		latencyRow("initialize + first `tools/call`", setupAndFirst),
		latencyRow("later `tools/call`s in the same session", later),
		"",
		`**A session's setup and first call: ${ms(percentile(setupAndFirst, 50))} ms at p50, against ${ms(percentile(later, 50))} ms for a later call**` +
			` (${ratio(percentile(setupAndFirst, 50) / percentile(later, 50))}).`,
		`Sessions the connector still held right after each round's sessions were ended: ${c.stdio.heldAfterRounds.join(", ") || "n/a"}.`,
		`The gateway's Durable Object requests per session (setup, ${1 + laterPerSession} calls, DELETE):`,
		`${perSession(c.stdio.durableObjectRequests, sessions.length)}.`,
		"",
	];
}
