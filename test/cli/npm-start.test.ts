/**
 * `npm start` as a developer runs it, in a copy of the project in a temporary directory: the run
 * writes its own .dev.vars and .wrangler/state there, never this clone's. It runs on a base port
 * the test chose (free at the time), and a SIGTERM to npm (an IDE's stop button) stops every
 * process it started and frees every port; a busy port is named, with how to start elsewhere.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, describe, expect, it } from "vitest";
import { busyServices, LOCAL_SERVICES, type LocalService, localPorts } from "../../scripts/local-ports.ts";
import { type Child, HOST, Processes, waitForLine } from "../../scripts/processes.ts";
import { eventually } from "../support/eventually.ts";
import { envWithoutNpm } from "./run-cli.ts";

const ROOT = join(import.meta.dirname, "..", "..");
/** What `npm start` reads of the project: its scripts, the Worker's sources and configuration. */
const PROJECT_FILES = ["package.json", "wrangler.toml", "tsconfig.json", "src", "scripts"];
const ALL_SERVICES = Object.keys(LOCAL_SERVICES) as LocalService[];
/** Building and starting the gateway under wrangler dev takes a while on two busy cores. */
const READY_MS = 180_000;

const copies: string[] = [];
const procs = new Processes();
const started: Child[] = [];

// Whatever happened, nothing this file started outlives it: wrangler runs in a process group of its own.
afterAll(async () => {
	for (const npm of started) {
		if (npm.process.pid === undefined || ended(npm.process.pid)) continue;
		for (const pid of descendants(npm.process.pid).keys()) signal(pid, "SIGKILL");
	}
	await procs.stopAll();
	for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});

/** The project in a temporary directory, with this clone's node_modules linked in. */
function projectCopy(): string {
	const dir = mkdtempSync(join(tmpdir(), "mcp-edge-npm-start-"));
	copies.push(dir);
	for (const name of PROJECT_FILES) cpSync(join(ROOT, name), join(dir, name), { recursive: true });
	symlinkSync(realpathSync(join(ROOT, "node_modules")), join(dir, "node_modules"));
	return dir;
}

/** A base port whose ports (LOCAL_SERVICES) are all free now, well away from 8787 and the OS's ephemeral range. */
async function freeBase(): Promise<number> {
	for (let tried = 0; tried < 50; tried += 1) {
		const base = 20_000 + Math.floor(Math.random() * 12_000);
		if ((await busyServices(localPorts(base), ALL_SERVICES)).length === 0) return base;
	}
	throw new Error("no base port with all its services' ports free after it");
}

/** `npm start -- --port <base>` in `dir`; `lines` gets everything it prints (`output` keeps only the last lines). */
function npmStart(dir: string, base: number): { npm: Child; lines: string[] } {
	const npm = procs.spawn("npm start", "npm", ["start", "--", "--port", String(base)], {
		cwd: dir,
		// Its own registry of local dev Workers: a developer's own `npm start` never sees this one.
		env: { ...envWithoutNpm(), NO_COLOR: "1", WRANGLER_REGISTRY_PATH: join(dir, "dev-registry") },
	});
	started.push(npm);
	const lines: string[] = [];
	npm.onLine((line) => lines.push(line));
	return { npm, lines };
}

/** pid → parent pid of every process now (Linux /proc). */
function parents(): Map<number, number> {
	const found = new Map<number, number>();
	for (const entry of readdirSync("/proc")) {
		if (!/^\d+$/.test(entry)) continue;
		const stat = readStat(Number(entry));
		if (stat) found.set(Number(entry), stat.ppid);
	}
	return found;
}

/** A process's state letter and parent, or null once it is gone. */
function readStat(pid: number): { state: string; ppid: number } | null {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		return { state: fields[0] ?? "", ppid: Number(fields[1]) };
	} catch {
		return null; // Exited (its /proc entry went with it).
	}
}

/** Every descendant of `root`, with its command line. */
function descendants(root: number): Map<number, string> {
	const byParent = parents();
	const found = new Map<number, string>();
	const queue = [root];
	while (queue.length > 0) {
		const parent = queue.shift();
		for (const [pid, ppid] of byParent) {
			if (ppid !== parent || found.has(pid)) continue;
			found.set(pid, commandOf(pid));
			queue.push(pid);
		}
	}
	return found;
}

function commandOf(pid: number): string {
	try {
		return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
	} catch {
		return ""; // Exited meanwhile.
	}
}

/** Gone, or a zombie nobody reaped yet (it holds no port and runs nothing). */
function ended(pid: number): boolean {
	const stat = readStat(pid);
	return stat === null || stat.state === "Z";
}

function signal(pid: number, name: NodeJS.Signals): void {
	try {
		process.kill(pid, name);
	} catch {
		// ESRCH: gone already.
	}
}

function occupy(port: number): Promise<Server> {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(port, HOST, () => resolve(server));
	});
}

/** The API key npm start made, kept in .wrangler/local-dev-key as `<id> <key>`. */
function localDevKey(dir: string): string {
	const [, key = ""] = readFileSync(join(dir, ".wrangler", "local-dev-key"), "utf8")
		.trim()
		.split(" ");
	return key;
}

/** An SDK client of `endpoint` with the API key, given to `use` and closed afterwards. */
async function withClient(endpoint: string, key: string, use: (client: Client) => Promise<void>): Promise<void> {
	const client = new Client({ name: "npm-start-test", version: "1" });
	await client.connect(
		new StreamableHTTPClientTransport(new URL(endpoint), {
			requestInit: { headers: { authorization: `Bearer ${key}` } },
		}),
	);
	try {
		await use(client);
	} finally {
		await client.close();
	}
}

/** rest-demo's operations listed as tools through the gateway with an SDK client, and getNote called: one request to the API. */
function expectRestDemoCall(endpoint: string, key: string): Promise<void> {
	return withClient(endpoint, key, async (client) => {
		const { tools } = await client.listTools();
		expect(tools.map((tool) => tool.name).sort()).toEqual([
			"createNote",
			"deleteNote",
			"getNote",
			"listNotes",
			"searchNotes",
			"updateNote",
		]);
		const result = await client.callTool({ name: "getNote", arguments: { noteId: "1" } });
		expect(result.isError ?? false, JSON.stringify(result)).toBe(false);
		expect(JSON.stringify(result.content)).toContain("Welcome");
	});
}

/**
 * The system monitor's tool listed through the gateway with its View's address in `_meta.ui`,
 * and that View read as the host reads it: the app's HTML, as an MCP App.
 */
function expectAppView(endpoint: string, key: string): Promise<void> {
	return withClient(endpoint, key, async (client) => {
		const { tools } = await client.listTools();
		const view = "ui://system-monitor/mcp-app.html";
		expect(tools.find((tool) => tool.name === "get-system-info")?._meta).toMatchObject({ ui: { resourceUri: view } });
		const { contents } = await client.readResource({ uri: view });
		expect(contents[0]).toMatchObject({ uri: view, mimeType: "text/html;profile=mcp-app" });
		expect(contents[0] !== undefined && "text" in contents[0] ? contents[0].text : "").toContain(
			"<title>System Monitor</title>",
		);
	});
}

describe("npm start", () => {
	it("runs on the base port it is given (--port), every service and registration beside it, and a SIGTERM to npm stops every process it started and frees every port", {
		timeout: READY_MS + 60_000,
	}, async () => {
		const dir = projectCopy();
		const base = await freeBase();
		const ports = localPorts(base);
		const { npm, lines } = npmStart(dir, base);
		await waitForLine(npm, /Press Ctrl-C to stop/, READY_MS);
		expect(lines).toContain(` MCP endpoint : http://${HOST}:${base}/mcp/demo`);

		const health = await fetch(`http://${HOST}:${base}/healthz`);
		expect(health.status).toBe(200);
		// The registrations name this run's ports, and the servers that need each caller answer as such.
		const token = /^ADMIN_TOKEN="([^"]+)"$/m.exec(readFileSync(join(dir, ".dev.vars"), "utf8"))?.[1];
		const server = async (name: string) =>
			(await (
				await fetch(`http://${HOST}:${base}/admin/servers/${name}?check=true`, {
					headers: { authorization: `Bearer ${token}` },
				})
			).json()) as { url: string; check: { needsCaller?: string } };
		expect((await server("demo")).url).toBe(`http://${HOST}:${ports.upstream}/mcp`);
		expect(await server("oauth-demo")).toMatchObject({
			url: `http://${HOST}:${ports.oauthUpstream}/mcp`,
			check: { needsCaller: "oauth" },
		});
		expect(await server("whoami-demo")).toMatchObject({
			url: `http://${HOST}:${ports.identityUpstream}/mcp`,
			check: { needsCaller: "identity" },
		});
		expect(readFileSync(join(dir, ".dev.vars"), "utf8")).toContain(`OIDC_ISSUER="http://${HOST}:${ports.idp}"`);
		// The private demo server has no address: the connector npm start runs dialled in for it.
		const files = (await server("files")) as unknown as { url?: string; connector?: object; connectors?: unknown[] };
		expect(files.connector).toEqual({});
		expect(files.url).toBeUndefined();
		expect(files.connectors).toHaveLength(1);
		expect(lines.some((line) => line.startsWith("[connector] mcpgw connect: connected to"))).toBe(true);
		// The demo REST API is a server made from its OpenAPI document: its tools listed, and a call answered, through the gateway.
		const restDocument = `http://${HOST}:${ports.restDemo}/openapi.json`;
		expect(await server("rest-demo")).toMatchObject({ openapi: { url: restDocument } });
		expect(lines.some((line) => line.includes(`(${restDocument}) and answers each operation as a tool itself`))).toBe(
			true,
		);
		await expectRestDemoCall(`http://${HOST}:${base}/mcp/rest-demo`, localDevKey(dir));
		// The MCP App: registered on its port, printed in the banner, its View read through the gateway.
		expect(await server("system-monitor")).toMatchObject({ url: `http://${HOST}:${ports.appDemo}/mcp` });
		expect(
			lines.some((line) => line.includes(`system-monitor : the MCP Apps extension's system monitor example`)),
		).toBe(true);
		await expectAppView(`http://${HOST}:${base}/mcp/system-monitor`, localDevKey(dir));

		const npmPid = npm.process.pid ?? 0;
		const tree = descendants(npmPid);
		const commands = [...tree.values()];
		// The tree holds what must stop: the script (exec'd by npm's shell), wrangler, and workerd under it.
		expect(commands.some((command) => command.includes("scripts/start.ts"))).toBe(true);
		expect(commands.some((command) => command.includes("wrangler"))).toBe(true);
		expect(commands.some((command) => command.includes("workerd"))).toBe(true);
		expect(commands.some((command) => command.includes("mcpgw.mjs connect files"))).toBe(true);
		expect(commands.some((command) => command.includes("server-system-monitor"))).toBe(true);
		expect(await busyServices(ports, ALL_SERVICES)).toEqual(ALL_SERVICES);

		process.kill(npmPid, "SIGTERM");
		await eventually(() => ended(npmPid), "npm's exit", 30_000);
		expect(lines).toContain("npm start: terminated; stopping everything it started.");
		await eventually(
			() => [...tree.keys()].filter((pid) => !ended(pid)).length === 0,
			"every process npm start started has exited",
			15_000,
		);
		expect(await busyServices(ports, ALL_SERVICES)).toEqual([]);
	});

	it("names a busy port and how to start on another base, and writes and starts nothing", async () => {
		const dir = projectCopy();
		const base = await freeBase();
		const ports = localPorts(base);
		const taken = await occupy(ports.idp);
		try {
			const { npm, lines } = npmStart(dir, base);
			await npm.exited;
			expect(npm.process.exitCode).toBe(1);
			const printed = lines.join("\n");
			expect(printed).toContain(
				`npm start failed: Port ${ports.idp} (the identity provider) is already in use: is another 'npm start' running?`,
			);
			expect(printed).toMatch(/npm start -- --port (\d+) {3}\(or PORT=\1 npm start\)/);
			expect(existsSync(join(dir, ".dev.vars"))).toBe(false);
			expect(existsSync(join(dir, ".wrangler"))).toBe(false);
			expect(await busyServices(ports, ALL_SERVICES)).toEqual(["idp"]);
		} finally {
			await new Promise((resolve) => taken.close(resolve));
		}
	});
});
