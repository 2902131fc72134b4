/**
 * The benchmark's upstream, as its own process: the SDK McpServer fixture of
 * scripts/upstream-server.ts on a free loopback port. Prints one line
 * `ready <port>` once it listens. Exits on SIGTERM/SIGINT and when its stdin
 * closes, so it never outlives the benchmark that started it, even one that
 * was killed.
 */
import { startUpstream } from "./upstream-server.ts";

const upstream = await startUpstream({ name: "bench", port: 0 });
console.log(`ready ${upstream.port}`);

let closing = false;
function stop(): void {
	if (closing) return;
	closing = true;
	const force = setTimeout(() => process.exit(0), 2_000);
	force.unref();
	void upstream.close().finally(() => process.exit(0));
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
