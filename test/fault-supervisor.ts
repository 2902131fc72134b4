/**
 * Runs scripts/fault-upstream.ts as a child process on a fixed port and lets
 * tests (in workerd, which can only reach 127.0.0.1 over HTTP) start, stop and
 * restart it through a small HTTP supervisor:
 *
 * - `POST /start`: spawn the upstream unless it runs; wait until it is ready.
 * - `POST /stop`: SIGKILL the upstream; wait until it has exited.
 * - `POST /restart`: stop, then start again on the same port.
 * - `GET /status`: whether it runs, and its pid.
 *
 * Every route answers `{ running, pid }` (pid null when not running), or 500
 * with `{ error }`. The supervisor notices when the upstream exits by itself
 * (the `crash` tool), so /status then says running:false and /start works.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const READY_TIMEOUT_MS = 10_000;

export interface FaultSupervisor {
	/** The supervisor's own HTTP port on 127.0.0.1. */
	supervisorPort: number;
	/** The fault upstream's port on 127.0.0.1; it stays the same across restarts. */
	faultPort: number;
	/** The directory holding the upstream's state (log.jsonl, fault budgets). */
	stateDir: string;
	/** Kills the upstream, closes the supervisor and removes the state directory. */
	stop(): Promise<void>;
}

interface Running {
	child: ChildProcess;
	pid: number;
	exited: Promise<void>;
}

/** A port that was free a moment ago, on 127.0.0.1. */
async function freePort(): Promise<number> {
	const probe = createNetServer();
	await new Promise<void>((resolve, reject) => {
		probe.once("error", reject);
		probe.listen(0, "127.0.0.1", resolve);
	});
	const { port } = probe.address() as AddressInfo;
	await new Promise<void>((resolve) => probe.close(() => resolve()));
	return port;
}

export async function startFaultSupervisor(root: string): Promise<FaultSupervisor> {
	const faultPort = await freePort();
	const stateDir = await mkdtemp(join(tmpdir(), "fault-upstream-"));
	const script = join(root, "scripts", "fault-upstream.ts");
	let current: Running | undefined;
	let stopped = false;

	const launch = (): Promise<Running> =>
		new Promise<Running>((resolve, reject) => {
			const child = spawn(process.execPath, [script, String(faultPort), stateDir], {
				cwd: root,
				env: { ...process.env, FAULT_UPSTREAM_EXIT_WITH_STDIN: "1" },
				stdio: ["pipe", "pipe", "pipe"],
			});
			let stdout = "";
			let stderr = "";
			let ready = false;
			const exited = new Promise<void>((done) => {
				child.once("exit", () => {
					if (current?.child === child) current = undefined;
					done();
				});
			});
			const fail = (message: string) => {
				clearTimeout(timer);
				child.kill("SIGKILL");
				reject(new Error(`fault upstream (port ${faultPort}) ${message}${stderr ? `\nstderr:\n${stderr}` : ""}`));
			};
			const timer = setTimeout(() => fail(`printed no "ready" line within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
			child.stdout?.setEncoding("utf8");
			child.stdout?.on("data", (chunk: string) => {
				if (ready) return;
				stdout += chunk;
				const match = /^ready (\d+) (\d+)$/m.exec(stdout);
				if (!match) return;
				ready = true;
				clearTimeout(timer);
				resolve({ child, pid: Number(match[2]), exited });
			});
			child.stderr?.setEncoding("utf8");
			child.stderr?.on("data", (chunk: string) => {
				stderr = (stderr + chunk).slice(-8192);
				if (ready) process.stderr.write(`[fault-upstream ${child.pid}] ${chunk}`);
			});
			// A closed stdin pipe must not crash the supervisor when the child is gone.
			child.stdin?.on("error", () => {});
			child.once("error", (error) => {
				if (!ready) fail(`could not start: ${error.message}`);
			});
			child.once("exit", (code, signal) => {
				if (!ready) fail(`exited before it was ready (code ${code}, signal ${signal})`);
			});
		});

	const start = async () => {
		if (!current) current = await launch();
	};
	const stopChild = async () => {
		const running = current;
		if (!running) return;
		running.child.kill("SIGKILL");
		await running.exited;
		if (current === running) current = undefined;
	};

	// One operation at a time: a restart must not interleave with a start.
	let queue: Promise<unknown> = Promise.resolve();
	const serialize = <T>(operation: () => Promise<T>): Promise<T> => {
		const next = queue.then(operation, operation);
		queue = next.catch(() => {});
		return next;
	};
	const status = () => ({ running: current !== undefined, pid: current?.pid ?? null });

	try {
		await serialize(start);
	} catch (error) {
		await rm(stateDir, { recursive: true, force: true });
		throw error;
	}

	const server: Server = createServer((req, res) => {
		const route = `${req.method} ${new URL(req.url ?? "/", "http://localhost").pathname}`;
		const operations: Record<string, () => Promise<void>> = {
			"POST /start": start,
			"POST /stop": stopChild,
			"POST /restart": async () => {
				await stopChild();
				await start();
			},
			"GET /status": async () => {},
		};
		const operation = operations[route];
		req.resume();
		if (!operation) {
			res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: `no route ${route}` }));
			return;
		}
		serialize(async () => {
			if (stopped) throw new Error("the supervisor is stopped");
			await operation();
		}).then(
			() => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(status())),
			(error: unknown) =>
				res
					.writeHead(500, { "content-type": "application/json" })
					.end(JSON.stringify({ error: error instanceof Error ? error.message : String(error), ...status() })),
		);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const supervisorPort = (server.address() as AddressInfo).port;

	return {
		supervisorPort,
		faultPort,
		stateDir,
		stop: async () => {
			await serialize(async () => {
				stopped = true;
				await stopChild();
			});
			server.closeAllConnections();
			await new Promise<void>((resolve) => server.close(() => resolve()));
			await rm(stateDir, { recursive: true, force: true });
		},
	};
}
