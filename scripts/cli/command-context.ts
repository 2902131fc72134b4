/** What every command needs: the admin client for `--url`, and whether to print JSON. */
import type { Command } from "commander";
import { AdminClient, CliError, resolveConnection } from "./admin-client.ts";
import { printJson } from "./output.ts";

export interface GlobalOptions {
	url?: string;
	json?: boolean;
}

export function clientFor(command: Command): AdminClient {
	return new AdminClient(resolveConnection(command.optsWithGlobals<GlobalOptions>()));
}

export function wantsJson(command: Command): boolean {
	return command.optsWithGlobals<GlobalOptions>().json === true;
}

/** Prints `value` as JSON under --json, else the text `human` makes of it. */
export function print(command: Command, value: unknown, human: () => string): void {
	if (wantsJson(command)) printJson(value);
	else process.stdout.write(`${human()}\n`);
}

/** A JSON option's value, parsed, or a sentence naming the option. */
export function parseJsonOption(option: string, text: string): unknown {
	try {
		return JSON.parse(text);
	} catch (error) {
		throw new CliError(`${option}: not valid JSON (${(error as Error).message}).`, { cause: error });
	}
}

/** Commander's collector for a repeatable option. */
export function collect(value: string, previous: string[] = []): string[] {
	return [...previous, value];
}

/** A positive integer option, or a sentence naming it. */
export function integerOption(option: string): (text: string) => number {
	return (text) => {
		const value = Number(text);
		if (!Number.isInteger(value) || value < 0) throw new CliError(`${option}: '${text}' is not a whole number.`);
		return value;
	};
}
