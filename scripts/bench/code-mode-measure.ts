/**
 * The code-mode figures (issue 39, point 6): the gateway under `wrangler dev` (its Worker Loader
 * binding included) with an aggregate of the demo servers `npm start` registers that a key can reach
 * (`demo`, `modern-demo`) and `@modelcontextprotocol/server-everything` (over Streamable HTTP), and
 * one API key per disclosure mode. Each task of code-mode-tasks.ts runs in each mode in a session of
 * its own, its bytes and round trips counted (code-mode-session.ts); then `execute_code` with one
 * inner call (`demo__add`) against the direct `tools/call` of the same tool, alternating.
 */

import { createRequire } from "node:module";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { z } from "zod";
import { startModernUpstream } from "../fixtures/modern-upstream.ts";
import { startUpstream } from "../fixtures/upstream-server.ts";
import { freePort, HOST, type Processes, waitForLine } from "../processes.ts";
import { buildWorker, ROOT, startWranglerDev, wranglerEnv } from "../wrangler-dev.ts";
import { ModelSession, type Tally } from "./code-mode-session.ts";
import { type Mode, TASKS } from "./code-mode-tasks.ts";
import { writeGatewayFiles } from "./gateway-files.ts";
import { percentile } from "./report-format.ts";

export interface CodeModeFigures {
	servers: { name: string; tools: number }[];
	tools: number;
	/** Bytes of the tools/list reply a model reads, per mode. */
	listBytes: Record<Mode, number>;
	tasks: { id: string; what: string; modes: Record<Mode, Tally> }[];
	/** ms of each call, `execute_code` with one inner call and the direct call, alternating. */
	latency: { calls: number; direct: { p50: number; p95: number }; program: { p50: number; p95: number } };
}

interface Gateway {
	url: string;
	adminToken: string;
	stop(): Promise<void>;
}

const KeySchema = z.object({ key: z.string() });
const ListSchema = z.object({ tools: z.array(z.object({ name: z.string() })) });

async function admin(gateway: Gateway, method: string, path: string, body: unknown): Promise<unknown> {
	const response = await fetch(`${gateway.url}/admin${path}`, {
		method,
		headers: { authorization: `Bearer ${gateway.adminToken}`, "content-type": "application/json" },
		body: JSON.stringify(body),
		signal: AbortSignal.timeout(30_000),
	});
	const text = await response.text();
	if (!response.ok) throw new Error(`${method} /admin${path} answered ${response.status}: ${text.slice(0, 300)}`);
	return JSON.parse(text);
}

/** The gateway built as it would be uploaded and served by `wrangler dev`, with temporary state and secrets. */
async function startGateway(procs: Processes): Promise<Gateway> {
	const tmp = procs.tempDir("mcp-edge-code-mode-");
	const env = wranglerEnv(tmp);
	const { adminToken, envFile, gatewayConfig: config } = writeGatewayFiles(tmp);
	const built = await buildWorker(procs, {
		name: "gateway",
		config: join(ROOT, "wrangler.toml"),
		outDir: join(tmp, "bundle"),
		env,
	});
	const dev = await startWranglerDev(procs, {
		name: "gateway (wrangler dev)",
		config,
		entry: built.entry,
		persistTo: join(tmp, "state"),
		env,
		extraArgs: ["--env-file", envFile],
	});
	return { url: dev.url, adminToken, stop: () => procs.stop(dev.child) };
}

/** server-everything over Streamable HTTP on a free port, as a registered server would run. */
async function startEverything(procs: Processes): Promise<{ url: string; stop(): Promise<void> }> {
	const entry = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");
	const port = await freePort();
	const child = procs.spawn("server-everything", process.execPath, [entry, "streamableHttp"], {
		cwd: ROOT,
		env: { ...process.env, PORT: String(port) },
	});
	await waitForLine(child, /listening on port/i, 30_000);
	return { url: `http://${HOST}:${port}/mcp`, stop: () => procs.stop(child) };
}

async function timed(run: () => Promise<unknown>): Promise<number> {
	const start = performance.now();
	await run();
	return performance.now() - start;
}

/** Every figure; `quick` makes fewer latency calls. `log` says what it is doing. */
export async function measureCodeMode(
	procs: Processes,
	{ quick, log }: { quick: boolean; log: (line: string) => void },
): Promise<CodeModeFigures> {
	log("code mode: building and starting the gateway (wrangler dev) and the upstreams...");
	const [gateway, demo, modern, everything] = await Promise.all([
		startGateway(procs),
		startUpstream({ name: "demo", port: 0 }),
		startModernUpstream({ name: "modern-demo", legacy: "stateless", port: 0 }),
		startEverything(procs),
	]);
	try {
		await admin(gateway, "PUT", "/servers/demo", { url: demo.url });
		await admin(gateway, "PUT", "/servers/modern-demo", { url: modern.url, protocol: "2026-07-28" });
		await admin(gateway, "PUT", "/servers/everything", { url: everything.url });
		const servers = ["demo", "modern-demo", "everything"];
		const keyOf = async (mode: Mode) =>
			KeySchema.parse(
				await admin(gateway, "POST", "/keys", { name: `code-mode-bench-${mode}`, servers, disclosure: mode }),
			).key;
		const keys: Record<Mode, string> = {
			full: await keyOf("full"),
			search: await keyOf("search"),
			code: await keyOf("code"),
		};

		const listing = await ModelSession.open(gateway.url, keys.full);
		const { tools } = ListSchema.parse(await listing.listTools());
		const listed = async (mode: Mode) => {
			const session = await ModelSession.open(gateway.url, keys[mode]);
			await session.listTools();
			return session.tally.read;
		};
		const listBytes: Record<Mode, number> = {
			full: listing.tally.read,
			search: await listed("search"),
			code: await listed("code"),
		};
		const counts = servers.map((name) => ({
			name,
			tools: tools.filter((tool) => tool.name.startsWith(`${name}__`)).length,
		}));

		log("code mode: the three tasks in each mode...");
		const tasks: CodeModeFigures["tasks"] = [];
		for (const task of TASKS) {
			const answers: string[] = [];
			const tallyOf = async (mode: Mode): Promise<Tally> => {
				const session = await ModelSession.open(gateway.url, keys[mode]);
				answers.push(JSON.stringify(await task.run(session, mode)));
				return { ...session.tally };
			};
			const modes: Record<Mode, Tally> = {
				full: await tallyOf("full"),
				search: await tallyOf("search"),
				code: await tallyOf("code"),
			};
			if (new Set(answers).size !== 1)
				throw new Error(`task ${task.id} answered differently by mode: ${answers.join(" | ")}`);
			tasks.push({ id: task.id, what: task.what, modes });
		}

		const calls = quick ? 30 : 300;
		log(`code mode: execute_code with one inner call against the direct call, ${calls} of each, alternating...`);
		const direct = await ModelSession.open(gateway.url, keys.full);
		const code = await ModelSession.open(gateway.url, keys.code);
		const directCall = () => direct.callTool("demo__add", { a: 1, b: 2 });
		const programCall = () =>
			code.callTool("execute_code", { code: "return await codemode.demo__add({ a: 1, b: 2 });" });
		for (let warm = 0; warm < 10; warm++) await Promise.all([directCall(), programCall()]);
		const directMs: number[] = [];
		const programMs: number[] = [];
		for (let turn = 0; turn < calls; turn++) {
			directMs.push(await timed(directCall));
			programMs.push(await timed(programCall));
		}
		const figures = (values: number[]) => ({ p50: percentile(values, 50), p95: percentile(values, 95) });
		return {
			servers: counts,
			tools: tools.length,
			listBytes,
			tasks,
			latency: { calls, direct: figures(directMs), program: figures(programMs) },
		};
	} finally {
		await Promise.all([gateway.stop(), demo.close(), modern.close(), everything.stop()]);
	}
}
