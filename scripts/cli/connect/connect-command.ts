/**
 * `mcpgw connect <server>`: the connector, from the command line to
 * runConnector. Everything a person can get wrong is said before dialling.
 *
 * @example
 *   mcpgw connect files --url https://gateway.example --token mcpgwc1_… -- npx -y @modelcontextprotocol/server-filesystem /srv/files
 *   mcpgw connect wiki --upstream http://wiki.internal:8080/mcp
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Command } from "commander";
import { z } from "zod";
import { CONNECTOR_PATH } from "../../../src/connectors/frames.ts";
import { connectorTokenId } from "../../../src/registry/connector-tokens.ts";
import { SERVER_NAME } from "../../../src/registry/schemas.ts";
import { CliError, resolveConnection } from "../admin-client.ts";
import { collect, type GlobalOptions, integerOption } from "../command-context.ts";
import { DEFAULT_BACKOFF } from "./backoff.ts";
import { parseEnvFromHeaders, TOKEN_VARIABLE } from "./child-environment.ts";
import { type ConnectorMode, runConnector } from "./connector.ts";
import { systemTimers } from "./timers.ts";

/** Heartbeat interval: well inside the idle timeouts of the proxies between a connector and the gateway. */
const HEARTBEAT_MS = 20_000;

/** For tests: the backoff's base in ms (its cap is 60 times the base, as 30 s is of 0.5 s), and the heartbeat interval. */
const BACKOFF_VARIABLE = "MCPGW_CONNECT_BACKOFF_MS";
const HEARTBEAT_VARIABLE = "MCPGW_CONNECT_HEARTBEAT_MS";

interface ConnectOptions {
	token?: string;
	upstream?: string;
	maxSessions: number;
	env?: string[];
	drainSeconds: number;
}

const PackageSchema = z.object({ version: z.string() });

function connectorVersion(): string {
	const text = readFileSync(new URL("../../../package.json", import.meta.url), "utf8");
	return PackageSchema.parse(JSON.parse(text)).version;
}

/** `http(s)://gateway` → `ws(s)://gateway/connector/<server>`. */
export function socketUrl(gateway: string, server: string): string {
	const url = new URL(`${CONNECTOR_PATH}/${server}`, gateway);
	url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
	return url.toString();
}

function positiveMs(variable: string, fallback: number): number {
	const text = process.env[variable];
	if (text === undefined || text === "") return fallback;
	const value = Number(text);
	if (!Number.isInteger(value) || value <= 0) throw new CliError(`${variable}: '${text}' is not a whole number of ms.`);
	return value;
}

function modeFrom(options: ConnectOptions, command: string[]): ConnectorMode {
	const [program, ...args] = command;
	if (options.upstream !== undefined) {
		if (program !== undefined) throw new CliError("give either --upstream <url> or a command after --, not both.");
		const url = URL.parse(options.upstream);
		if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
			throw new CliError(`--upstream: '${options.upstream}' is not an http(s) URL (like http://10.0.0.5:8080/mcp).`);
		}
		if (options.env?.length)
			throw new CliError("--env sets a stdio server's environment; it has no use with --upstream.");
		return { kind: "http", upstream: url.toString() };
	}
	if (program === undefined) {
		throw new CliError(
			"say what to serve: a stdio server's command after -- (e.g. -- npx -y @modelcontextprotocol/server-everything), or --upstream <url>.",
		);
	}
	return { kind: "stdio", command: { command: program, args }, envFromHeaders: parseEnvFromHeaders(options.env ?? []) };
}

export function addConnectCommand(program: Command): void {
	program
		.command("connect")
		.description(
			"serve <server> to the gateway from this machine: a stdio server (one child per session) or --upstream",
		)
		.argument("<server>", 'the server\'s name in the gateway (registered with "connector": {})')
		.argument("[command...]", "the stdio server to run for each session, after --")
		.option("--token <token>", `the server's connector token (default: ${TOKEN_VARIABLE})`)
		.option("--upstream <url>", "forward to a streamable-HTTP MCP server on this network instead of running a command")
		.option("--max-sessions <n>", "the most sessions (stdio: children) at once", integerOption("--max-sessions"), 16)
		.option(
			"--env <NAME=header:Header>",
			"a child's variable NAME from its session's request header (repeatable)",
			collect,
		)
		.option(
			"--drain-seconds <n>",
			"on SIGINT/SIGTERM, how long calls in flight may take to finish",
			integerOption("--drain-seconds"),
			10,
		)
		.addHelpText(
			"after",
			`
Examples:
  mcpgw connect files --url https://gateway.example -- npx -y @modelcontextprotocol/server-filesystem /srv/files
  mcpgw connect github --env GITHUB_TOKEN=header:X-GitHub-Token -- npx -y @modelcontextprotocol/server-github
  mcpgw connect wiki --upstream http://wiki.internal:8080/mcp

The token comes from --token or ${TOKEN_VARIABLE} (POST /admin/servers/<server>/connector-tokens makes one). docs/connectors.md has the rest.`,
		)
		.action(async (server: string, command: string[], options: ConnectOptions, self: Command) => {
			if (!SERVER_NAME.test(server))
				throw new CliError(`'${server}' is not a server name (a-z, 0-9 and -, at most 32).`);
			const token = options.token ?? process.env[TOKEN_VARIABLE];
			if (!token) throw new CliError(`give the server's connector token with --token or ${TOKEN_VARIABLE}.`);
			if (connectorTokenId(token) === null) {
				throw new CliError(
					"the token is not a connector token (mcpgwc1_…): make one for the server, not an API key or the admin token.",
				);
			}
			if (options.maxSessions < 1) throw new CliError("--max-sessions: at least 1.");
			const mode = modeFrom(options, command);
			const { url } = resolveConnection(self.optsWithGlobals<GlobalOptions>());
			const baseMs = positiveMs(BACKOFF_VARIABLE, DEFAULT_BACKOFF.baseMs);
			await runConnector({
				server,
				socketUrl: socketUrl(url, server),
				token,
				mode,
				maxSessions: options.maxSessions,
				drainMs: options.drainSeconds * 1000,
				heartbeatMs: positiveMs(HEARTBEAT_VARIABLE, HEARTBEAT_MS),
				backoff: { baseMs, capMs: baseMs * (DEFAULT_BACKOFF.capMs / DEFAULT_BACKOFF.baseMs) },
				version: connectorVersion(),
				host: hostname(),
				timers: systemTimers,
				random: Math.random,
			});
		});
}
