/**
 * Child processes and temporary files of the scripts (`npm start`, `npm run
 * bench`, `npm run conformance`), kept tidy: every
 * child runs in its own process group (wrangler starts workerd and esbuild
 * under it) and the whole group is stopped on exit, on errors, on SIGINT,
 * SIGTERM and SIGHUP, and when the process that started the script goes away.
 * Every wait has a timeout and names what it waited for.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

export const HOST = "127.0.0.1";

/** Lines of a child's output kept for error messages. */
const KEPT_LINES = 80;
/** How long a child gets to stop after SIGTERM before its group is killed. */
const STOP_GRACE_MS = 5_000;
/** How often a script looks whether the process that started it is still there. */
const PARENT_POLL_MS = 1_000;
/**
 * A second signal this soon after the first, and the same one, is the first delivered twice: a
 * terminal's Ctrl-C reaches both npm and the script, and npm passes its own on to the script.
 */
const SAME_SIGNAL_MS = 1_000;

export interface Child {
	name: string;
	process: ChildProcess;
	/** The last lines it printed (stdout and stderr). */
	output: string[];
	exited: Promise<void>;
	/** Called with each line it prints. */
	onLine(listener: (line: string) => void): void;
}

export class Processes {
	private readonly children: Child[] = [];
	private readonly temporary: string[] = [];

	/** Starts a child in its own process group, with its output captured (never inherited). */
	spawn(
		name: string,
		command: string,
		args: string[],
		options: { cwd: string; env?: NodeJS.ProcessEnv; keepStdinOpen?: boolean },
	): Child {
		const child = spawn(command, args, {
			cwd: options.cwd,
			env: options.env ?? process.env,
			// A pipe we never close lets a child watch for our death (stdin ends); "ignore" turns off
			// wrangler's interactive hotkeys.
			stdio: [options.keepStdinOpen ? "pipe" : "ignore", "pipe", "pipe"],
			detached: true,
		});
		const output: string[] = [];
		const listeners: Array<(line: string) => void> = [];
		const record = (line: string) => {
			output.push(line);
			if (output.length > KEPT_LINES) output.shift();
			for (const listener of listeners) listener(line);
		};
		if (child.stdout) createInterface({ input: child.stdout }).on("line", record);
		if (child.stderr) createInterface({ input: child.stderr }).on("line", record);
		const exited = new Promise<void>((resolve) => {
			if (child.exitCode !== null || child.signalCode !== null) resolve();
			else child.once("exit", () => resolve());
		});
		child.once("error", (error) => record(`[spawn error] ${error.message}`));
		const entry: Child = { name, process: child, output, exited, onLine: (listener) => listeners.push(listener) };
		this.children.push(entry);
		return entry;
	}

	/** A new temporary directory, removed by `stopAll` (and `killAllSync`). */
	tempDir(prefix: string): string {
		const dir = mkdtempSync(join(tmpdir(), prefix));
		this.temporary.push(dir);
		return dir;
	}

	/** Children that have exited (by now), with their last output: the likely cause of a failure. */
	exited(): string[] {
		return this.children.filter((child) => !isRunning(child.process)).map((child) => childReport(child));
	}

	/** A path (file or dir) to remove with the temporary dirs. */
	removeOnExit(path: string): void {
		this.temporary.push(path);
	}

	/** Stops one child's process group: SIGTERM, then SIGKILL after a grace period. */
	async stop(child: Child): Promise<void> {
		if (!isRunning(child.process)) return;
		signalGroup(child.process, "SIGTERM");
		const stopped = await Promise.race([child.exited.then(() => true), delay(STOP_GRACE_MS).then(() => false)]);
		// workerd may outlive wrangler's own exit briefly: the group is killed either way.
		signalGroup(child.process, "SIGKILL");
		if (!stopped) await Promise.race([child.exited, delay(1_000)]);
	}

	/** Stops every child's process group and removes temporary dirs. */
	async stopAll(): Promise<void> {
		await Promise.all(this.children.map((child) => this.stop(child)));
		this.removeTemporary();
	}

	/** Last resort from a synchronous `exit` handler: SIGKILL to every group still there. */
	killAllSync(): void {
		for (const child of this.children) signalGroup(child.process, "SIGKILL");
		this.removeTemporary();
	}

	private removeTemporary(): void {
		for (const dir of this.temporary.splice(0)) {
			try {
				rmSync(dir, { recursive: true, force: true });
			} catch {
				// Best effort: a temp dir left behind is harmless.
			}
		}
	}
}

function isRunning(child: ChildProcess): boolean {
	return child.exitCode === null && child.signalCode === null;
}

/** Signals the child's whole process group (it is its leader: spawned detached). */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
	if (child.pid === undefined) return;
	try {
		process.kill(-child.pid, signal);
	} catch {
		// ESRCH: the group is gone already.
	}
}

/**
 * Calls `onGone` once when the process that started this one has exited: this
 * one is then re-parented, so its parent's pid changes. That is how a script
 * learns that npm was killed outright (SIGKILL) or died of a signal it does not
 * pass on (SIGHUP); the signals npm does pass on reach the script itself.
 */
export function whenParentExits(onGone: () => void): void {
	const parent = process.ppid;
	const timer = setInterval(() => {
		if (process.ppid === parent) return;
		clearInterval(timer);
		onGone();
	}, PARENT_POLL_MS);
	// Watching must not keep a script alive that has nothing else to do.
	timer.unref();
}

/**
 * Stops a script cleanly however it ends: signals, its parent going away, an
 * uncaught error, or its own end. `shutdown` runs `beforeStop` (closing
 * clients and in-process servers), stops every child process group and removes
 * temporary dirs, then exits; a second signal kills at once (but the same
 * signal again within SAME_SIGNAL_MS is taken for the first, delivered twice).
 */
export function installShutdown(
	procs: Processes,
	name: string,
	beforeStop: () => Promise<unknown> | undefined = () => undefined,
): { shutdown(code: number, message?: string): Promise<never>; stopping(): boolean } {
	let stopping = false;
	let firstSignal: { signal: NodeJS.Signals; at: number } | undefined;
	const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
	const shutdown = async (code: number, message?: string): Promise<never> => {
		if (stopping) {
			// A second signal while stopping: no more waiting.
			procs.killAllSync();
			process.exit(code);
		}
		stopping = true;
		if (message) console.error(message);
		try {
			await withTimeout(
				Promise.all([beforeStop(), procs.stopAll()]),
				15_000,
				"stopping the child processes and servers",
			);
		} catch (error) {
			console.error(`${name}: ${describe(error)}; killing them`);
			procs.killAllSync();
		}
		process.exit(code);
	};
	const onSignal = (signal: NodeJS.Signals, code: number, message: string) => {
		process.on(signal, () => {
			const now = Date.now();
			if (firstSignal?.signal === signal && now - firstSignal.at < SAME_SIGNAL_MS) return;
			firstSignal ??= { signal, at: now };
			void shutdown(code, message);
		});
	};
	onSignal("SIGINT", 130, `\n${name}: interrupted; stopping everything it started.`);
	onSignal("SIGTERM", 143, `${name}: terminated; stopping everything it started.`);
	onSignal("SIGHUP", 129, `${name}: hung up; stopping everything it started.`);
	whenParentExits(
		() => void shutdown(129, `${name}: the process that started it is gone; stopping everything it started.`),
	);
	process.on("exit", () => procs.killAllSync());
	process.on(
		"unhandledRejection",
		(error) => void shutdown(1, `${name}: failed (unhandled rejection): ${describe(error)}`),
	);
	process.on(
		"uncaughtException",
		(error) => void shutdown(1, `${name}: failed (uncaught exception): ${describe(error)}`),
	);
	return { shutdown, stopping: () => stopping };
}

export function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Rejects after `ms` with a message naming what did not finish. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new Error(`${what} did not finish within ${(ms / 1000).toFixed(0)} s`)), ms);
	});
	try {
		return await Promise.race([promise, timeout]);
	} finally {
		clearTimeout(timer);
	}
}

/** A free TCP port on loopback (asked of the OS; free at the time of asking). */
export function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(0, HOST, () => {
			const address = server.address();
			const port = typeof address === "object" && address ? address.port : 0;
			server.close(() => (port ? resolve(port) : reject(new Error("the OS gave no free port"))));
		});
	});
}

/** Describes a child that failed, with the end of its output. */
export function childReport(child: Child): string {
	const status = child.process.exitCode ?? child.process.signalCode ?? "running";
	const tail = child.output.slice(-25).join("\n    ");
	return `${child.name} (exit: ${status}); its last output:\n    ${tail || "(none)"}`;
}

/** Resolves with the first line of the child's output that matches, or rejects when it exits or time runs out. */
export function waitForLine(child: Child, pattern: RegExp, ms: number): Promise<RegExpMatchArray> {
	return new Promise((resolve, reject) => {
		for (const line of child.output) {
			const match = pattern.exec(line);
			if (match) return resolve(match);
		}
		let settled = false;
		const timer = setTimeout(() => {
			if (settled) return;
			settled = true;
			reject(
				new Error(`${child.name} printed no line matching ${pattern} within ${ms / 1000} s: ${childReport(child)}`),
			);
		}, ms);
		child.onLine((line) => {
			const match = pattern.exec(line);
			if (match && !settled) {
				settled = true;
				clearTimeout(timer);
				resolve(match);
			}
		});
		void child.exited.then(() => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			reject(new Error(`${child.name} exited before it was ready: ${childReport(child)}`));
		});
	});
}

/** Polls `url` until it answers 200; fails if the child exits or `ms` passes. */
export async function waitHealthy(child: Child, url: string, ms: number): Promise<void> {
	const deadline = Date.now() + ms;
	while (Date.now() < deadline) {
		if (!isRunning(child.process)) throw new Error(`${child.name} exited before it was healthy: ${childReport(child)}`);
		try {
			const response = await fetch(url, { signal: AbortSignal.timeout(3_000) });
			await response.body?.cancel();
			if (response.status === 200) return;
		} catch {
			// Not listening yet.
		}
		await delay(250);
	}
	throw new Error(`${child.name} did not answer ${url} with 200 within ${ms / 1000} s: ${childReport(child)}`);
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ: 100 on Linux, whatever the kernel's HZ). */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU time (user + system, ms) used so far by every live process of each
 * process group, from /proc (Linux). Null where /proc is unavailable.
 */
export function groupCpuMs(groups: readonly number[]): Map<number, number> | null {
	let entries: string[];
	try {
		entries = readdirSync("/proc");
	} catch {
		return null;
	}
	const totals = new Map<number, number>(groups.map((group) => [group, 0]));
	for (const entry of entries) {
		if (!/^\d+$/.test(entry)) continue;
		let stat: string;
		try {
			stat = readFileSync(`/proc/${entry}/stat`, "utf8");
		} catch {
			continue; // Exited meanwhile.
		}
		// Fields after "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime.
		const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		const group = Number(fields[2]);
		const total = totals.get(group);
		if (total === undefined) continue;
		const ticks = Number(fields[11]) + Number(fields[12]);
		totals.set(group, total + (ticks * 1000) / CLOCK_TICKS_PER_SECOND);
	}
	return totals;
}

/**
 * For a server process a benchmark starts: closes it and exits on SIGTERM or
 * SIGINT, or when the parent's end of stdin closes (the parent died), so it
 * never outlives the benchmark. A close that hangs is cut short after 2 s.
 */
export function exitWhenParentGoes(close: () => Promise<unknown>): void {
	let closing = false;
	const stop = () => {
		if (closing) return;
		closing = true;
		const force = setTimeout(() => process.exit(0), 2_000);
		force.unref();
		void close().finally(() => process.exit(0));
	};
	process.on("SIGTERM", stop);
	process.on("SIGINT", stop);
	process.stdin.on("end", stop);
	process.stdin.on("close", stop);
	process.stdin.resume();
}
