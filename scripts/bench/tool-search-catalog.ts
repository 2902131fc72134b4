/**
 * The tool-search bench's catalog: what an aggregate over these servers lists, each server's tools
 * listed by an SDK client from the running server and namespaced as the gateway names them.
 * - the demo servers `npm start` registers (scripts/start.ts): `demo` (upstream-server.ts),
 *   `modern-demo` (modern-upstream.ts, listed over 2025 stateless), `oauth-demo` and `whoami-demo`
 *   (their per-session servers, in memory: listing needs none of their sign-in);
 * - `everything`: @modelcontextprotocol/server-everything, started over stdio, its client offering
 *   sampling, elicitation and roots so that it lists its conditional tools too;
 * - `tracker` and `files`: realistic catalogs written as fixtures (project-tracker-catalog.ts,
 *   cloud-files-catalog.ts).
 */

import { createRequire } from "node:module";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { namespacedName } from "../../src/mcp/namespacing.ts";
import { CLOUD_FILES_TOOLS } from "../fixtures/cloud-files-catalog.ts";
import { WHOAMI_DESCRIPTION, whoamiServer } from "../fixtures/identity-upstream.ts";
import { listedCatalogServer } from "../fixtures/listed-catalog.ts";
import { startModernUpstream } from "../fixtures/modern-upstream.ts";
import { createMcpServer as createOAuthDemoServer } from "../fixtures/oauth-upstream.ts";
import { PROJECT_TRACKER_TOOLS } from "../fixtures/project-tracker-catalog.ts";
import { startUpstream } from "../fixtures/upstream-server.ts";

/** One member of the aggregate: its server name and its tools as it lists them. */
export interface CatalogMember {
	server: string;
	tools: Tool[];
}

/** The aggregate: every member, and all their tools under their namespaced names, in member order. */
export interface AggregateCatalog {
	members: CatalogMember[];
	tools: Tool[];
}

/** A client that can be asked anything server-everything asks, so that it lists all its tools. */
function benchClient(): Client {
	return new Client(
		{ name: "tool-search-bench", version: "1.0.0" },
		{ capabilities: { sampling: {}, elicitation: { form: {}, url: {} }, roots: { listChanged: true } } },
	);
}

/** Every page of a server's tools/list, through `transport`; closes the client after. */
async function listedTools(transport: Transport): Promise<Tool[]> {
	const client = benchClient();
	await client.connect(transport);
	try {
		const tools: Tool[] = [];
		let cursor: string | undefined;
		do {
			const page = await client.listTools(cursor === undefined ? {} : { cursor });
			tools.push(...page.tools);
			cursor = page.nextCursor;
		} while (cursor !== undefined);
		return tools;
	} finally {
		await client.close();
	}
}

async function inMemoryTools(server: McpServer): Promise<Tool[]> {
	const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
	await server.connect(serverSide);
	try {
		return await listedTools(clientSide);
	} finally {
		await server.close();
	}
}

async function httpTools(start: () => Promise<{ url: string; close(): Promise<void> }>): Promise<Tool[]> {
	const upstream = await start();
	try {
		return await listedTools(new StreamableHTTPClientTransport(new URL(upstream.url)));
	} finally {
		await upstream.close();
	}
}

/** server-everything's entry, run with this Node over stdio as an MCP client would run it. */
async function everythingTools(): Promise<Tool[]> {
	const entry = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");
	return listedTools(new StdioClientTransport({ command: process.execPath, args: [entry, "stdio"], stderr: "ignore" }));
}

/** Lists every member's tools (a few seconds: two HTTP servers, one child process) and namespaces them. */
export async function aggregateCatalog(): Promise<AggregateCatalog> {
	const members: CatalogMember[] = [
		{ server: "demo", tools: await httpTools(() => startUpstream({ name: "demo", port: 0 })) },
		{
			server: "modern-demo",
			tools: await httpTools(() => startModernUpstream({ name: "modern-demo", legacy: "stateless", port: 0 })),
		},
		{ server: "oauth-demo", tools: await inMemoryTools(createOAuthDemoServer()) },
		{ server: "whoami-demo", tools: await inMemoryTools(whoamiServer(WHOAMI_DESCRIPTION).server) },
		{ server: "everything", tools: await everythingTools() },
		{ server: "tracker", tools: await inMemoryTools(listedCatalogServer("tracker", PROJECT_TRACKER_TOOLS)) },
		{ server: "files", tools: await inMemoryTools(listedCatalogServer("files", CLOUD_FILES_TOOLS)) },
	];
	const tools = members.flatMap(({ server, tools: listed }) =>
		listed.map((tool) => ({ ...tool, name: namespacedName(server, tool.name) })),
	);
	return { members, tools };
}
