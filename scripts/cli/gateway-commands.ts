/**
 * `status` (does the gateway answer, and each server's check) and `call`
 * (list and call tools through an endpoint with an API key, as a client
 * would: the smoke test after a deploy).
 */
import type { Command } from "commander";
import { CliError } from "./admin-client.ts";
import { clientFor, parseJsonOption, print, wantsJson } from "./command-context.ts";
import { table } from "./output.ts";

/** `needsCaller`: it refused the check as a server that takes each caller's own credential does (its auth mode). */
type Check = { reachable: boolean; speaksMcp: boolean; era: string | null; detail: string; needsCaller?: string };

/** The MCP column: a server that needs each caller's credential is not shown as failing for refusing the check. */
const mcpCell = (check: Check) => (check.needsCaller ? `needs a caller (${check.needsCaller})` : check.speaksMcp);

function status(program: Command): void {
	program
		.command("status")
		.description("what the gateway answers, and whether each server does")
		.action(async (_options, command: Command) => {
			const client = clientFor(command);
			const health = await client.fetch(`${client.connection.url}/healthz`);
			if (!health.ok)
				throw new CliError(`The gateway at ${client.connection.url} answered /healthz with HTTP ${health.status}.`);
			const { servers } = await client.request<{ servers: Array<{ name: string }> }>("GET", "/servers");
			const checks = await Promise.all(
				servers.map(async ({ name }) => {
					const server = await client.request<{ check: Check }>(
						"GET",
						`/servers/${encodeURIComponent(name)}?check=true`,
					);
					return { name, ...server.check };
				}),
			);
			const answer = { url: client.connection.url, healthy: true, servers: checks };
			print(command, answer, () =>
				[
					`Gateway ${client.connection.url}: healthy (/healthz).`,
					table(
						checks.map((check) => ({ ...check, mcp: mcpCell(check) })),
						[
							["SERVER", "name"],
							["REACHABLE", "reachable"],
							["MCP", "mcp"],
							["ERA", "era"],
							["DETAIL", "detail"],
						],
					),
				].join("\n"),
			);
		});
}

/** An endpoint's URL: a full URL as it is, a name as `<gateway>/mcp/<name>`, nothing as the aggregate `/mcp`. */
function endpointUrl(gateway: string, endpoint: string | undefined): URL {
	if (endpoint && /^https?:\/\//.test(endpoint)) return new URL(endpoint);
	return new URL(endpoint ? `${gateway}/mcp/${encodeURIComponent(endpoint)}` : `${gateway}/mcp`);
}

function call(program: Command): void {
	program
		.command("call <endpoint> [tool]")
		.description("list an endpoint's tools (a server or virtual server name, or a URL), or call one")
		.option("--key <key>", "the API key (default: MCP_API_KEY)")
		.option("--args <json>", "the tool's arguments as a JSON object", "{}")
		.action(
			async (endpoint: string, tool: string | undefined, options: { key?: string; args: string }, command: Command) => {
				// MCP_API_KEY, as the README's clients read it; MCPGW_KEY is its older name, still read.
				const key = options.key ?? process.env.MCP_API_KEY ?? process.env.MCPGW_KEY;
				if (!key) throw new CliError("No API key: pass --key or set MCP_API_KEY (mcpgw keys add makes one).");
				const args = parseJsonOption("--args", options.args);
				if (args === null || typeof args !== "object" || Array.isArray(args))
					throw new CliError("--args: must be a JSON object.");
				const url = endpointUrl(clientFor(command).connection.url, endpoint);
				// Loaded here: only `call` needs the SDK, and every other command starts sooner without it.
				const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
					import("@modelcontextprotocol/sdk/client/index.js"),
					import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
				]);
				const transport = new StreamableHTTPClientTransport(url, {
					requestInit: { headers: { authorization: `Bearer ${key}` } },
				});
				const client = new Client({ name: "mcpgw", version: "0.1.0" });
				try {
					await client.connect(transport);
					if (!tool) {
						const { tools } = await client.listTools();
						print(command, tools, () =>
							table(
								tools.map((listed) => ({ name: listed.name, description: listed.description?.split("\n")[0] })),
								[
									["TOOL", "name"],
									["DESCRIPTION", "description"],
								],
							),
						);
						return;
					}
					const result = await client.callTool({ name: tool, arguments: args as Record<string, unknown> });
					if (wantsJson(command)) print(command, result, () => "");
					else {
						const content = (result.content ?? []) as Array<{ type: string; text?: string }>;
						const text = content.map((part) => (part.type === "text" ? part.text : `[${part.type}]`)).join("\n");
						process.stdout.write(`${text}\n`);
					}
					if (result.isError) throw new CliError(`The tool '${tool}' answered with an error.`);
				} catch (error) {
					if (error instanceof CliError) throw error;
					throw new CliError(`${url}: ${(error as Error).message}`, { cause: error });
				} finally {
					await client.close();
				}
			},
		);
}

export function addGatewayCommands(program: Command): void {
	status(program);
	call(program);
}
