/**
 * The benchmark's upstream, as its own process: the SDK McpServer fixture of
 * scripts/fixtures/upstream-server.ts on a free loopback port. Prints one line
 * `ready <port>` once it listens. Exits on SIGTERM/SIGINT and when its stdin
 * closes, so it never outlives the benchmark that started it, even one that
 * was killed.
 */

import { startUpstream } from "../fixtures/upstream-server.ts";
import { exitWhenParentGoes } from "../processes.ts";

const upstream = await startUpstream({ name: "bench", port: 0 });
console.log(`ready ${upstream.port}`);

exitWhenParentGoes(() => upstream.close());
