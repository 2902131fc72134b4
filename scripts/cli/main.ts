/**
 * `mcpgw`: the gateway's admin API from a terminal, and its registry as a
 * config file. Started by mcpgw.mjs, which checks the Node version first.
 *
 * @example
 *   npx mcpgw servers list
 *   npx mcpgw apply -f examples/gateway.config.json
 */
import { Command, CommanderError } from "commander";
import { CliError, DEFAULT_URL } from "./admin-client.ts";
import { addConfigCommands } from "./config-commands.ts";
import { addConnectCommand } from "./connect/connect-command.ts";
import { addGatewayCommands } from "./gateway-commands.ts";
import { addResourceCommands } from "./resource-commands.ts";

export function buildProgram(): Command {
	const program = new Command("mcpgw")
		.description("Operate an mcp-edge-gateway through its admin API.")
		.option("--url <url>", `the gateway (default: MCPGW_URL, else ${DEFAULT_URL})`)
		.option("--json", "print JSON for scripts instead of tables")
		.addHelpText(
			"after",
			`
The admin token comes from MCPGW_ADMIN_TOKEN, or for a gateway on this machine from .dev.vars (npm start writes it).

Examples:
  mcpgw servers list
  mcpgw servers add notes --upstream https://notes.example/mcp --header 'Authorization: Bearer \${UPSTREAM_NOTES_TOKEN}'
  mcpgw keys add --name ci --server notes
  mcpgw status
  MCP_API_KEY=... mcpgw call demo echo --args '{"text":"hi"}'
  mcpgw plan -f gateway.config.json && mcpgw apply -f gateway.config.json
  mcpgw connect files --token mcpgwc1_... -- npx -y @modelcontextprotocol/server-filesystem /srv/files`,
		)
		.showHelpAfterError()
		.exitOverride();
	addResourceCommands(program);
	addGatewayCommands(program);
	addConfigCommands(program);
	addConnectCommand(program);
	// Every subcommand: commander's own errors thrown, not exited, so main decides the exit code.
	const override = (command: Command) => {
		command.exitOverride();
		command.commands.forEach(override);
	};
	override(program);
	return program;
}

/** Runs the CLI on `argv` (as process.argv); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
	try {
		await buildProgram().parseAsync(argv);
		return typeof process.exitCode === "number" ? process.exitCode : 0;
	} catch (error) {
		if (error instanceof CommanderError) return error.exitCode;
		if (error instanceof CliError) {
			process.stderr.write(`mcpgw: ${error.message}\n`);
			return 1;
		}
		throw error;
	}
}
