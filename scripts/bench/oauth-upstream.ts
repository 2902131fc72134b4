/**
 * The benchmark's upstream for its per-person credentials stage, as its own
 * process: the OAuth fixture of scripts/fixtures/oauth-upstream.ts (the SDK's
 * `mcpAuthRouter` authorization server, `requireBearerAuth` in front of its
 * MCP endpoints) on a free loopback port, whose `/mcp-modern` endpoint speaks
 * 2026-07-28 (SDK v2's `createMcpHandler`). Prints one line `ready <port>`
 * once it listens. Exits on SIGTERM/SIGINT and when its stdin closes, so it
 * never outlives the benchmark that started it.
 */

import { startOAuthUpstream } from "../fixtures/oauth-upstream.ts";
import { exitWhenParentGoes } from "../processes.ts";

const upstream = await startOAuthUpstream({ port: 0 });
console.log(`ready ${upstream.port}`);

exitWhenParentGoes(() => upstream.close());
