/**
 * The three multi-step tasks of the code-mode bench, each scripted as a model would do it in each
 * disclosure mode, over server-everything's tools on the aggregate:
 * - `largest`: `get-resource-links` (count 10) lists ten resources; the five with the largest ids,
 *   and the sum of those ids;
 * - `combine`: `get-structured-content` for each of its three cities; their mean temperature and
 *   their conditions together;
 * - `each`: `get-resource-links` (count 10), then `get-resource-reference` for each resource it
 *   lists; the texts of the ten resources
 *   (compared across modes by their count: each text carries the time it was made).
 * `full` lists the tools and calls them; `search` finds each tool with `search_tools` and calls it
 * through `call_tool`; `code` finds each tool (its signature) with `search_tools` and runs one
 * `execute_code`. Every mode starts with `tools/list`, as a client does. Each task returns its answer,
 * so that the modes can be checked to have done the same work.
 */

import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ModelSession } from "./code-mode-session.ts";

export const MODES = ["full", "search", "code"] as const;
export type Mode = (typeof MODES)[number];

const LINKS = "everything__get-resource-links";
const REFERENCE = "everything__get-resource-reference";
const WEATHER = "everything__get-structured-content";
const CITIES = ["New York", "Chicago", "Los Angeles"] as const;

export interface Task {
	id: string;
	/** What the task does, for the report. */
	what: string;
	run(session: ModelSession, mode: Mode): Promise<unknown>;
}

const FoundSchema = z.object({ tools: z.array(z.object({ name: z.string() })) });
const ProgramSchema = z.object({ result: z.unknown(), logs: z.array(z.string()) });
const WeatherSchema = z.object({ temperature: z.number(), conditions: z.string(), humidity: z.number() });

/** search_tools for `query`; throws unless `tool` is among what it found. */
async function find(session: ModelSession, query: string, tool: string): Promise<void> {
	const found = FoundSchema.parse((await session.callTool("search_tools", { query, limit: 5 })).structuredContent);
	if (!found.tools.some(({ name }) => name === tool)) {
		throw new Error(`search_tools "${query}" did not find ${tool}: ${found.tools.map(({ name }) => name).join(", ")}`);
	}
}

/** A call as the mode makes it: directly, or through `call_tool`. */
function call(session: ModelSession, mode: Mode, tool: string, args: Record<string, unknown>): Promise<CallToolResult> {
	return mode === "search"
		? session.callTool("call_tool", { name: tool, arguments: args })
		: session.callTool(tool, args);
}

async function program(session: ModelSession, code: string): Promise<unknown> {
	return ProgramSchema.parse((await session.callTool("execute_code", { code })).structuredContent).result;
}

/** The ids of the resources a get-resource-links answer lists (the last segment of each link's URI). */
function linkedIds(result: CallToolResult): number[] {
	return result.content.flatMap((part) => (part.type === "resource_link" ? [Number(part.uri.split("/").pop())] : []));
}

/** The texts of the resources a get-resource-reference answer embeds. */
function embeddedTexts(result: CallToolResult): string[] {
	return result.content.flatMap((part) =>
		part.type === "resource" && "text" in part.resource ? [part.resource.text] : [],
	);
}

/** The same helpers as a program writes them, inside the isolate. */
const PROGRAM_IDS = `const ids = links.filter((part) => part.type === "resource_link").map((part) => Number(part.uri.split("/").pop()));`;

export const TASKS: readonly Task[] = [
	{
		id: "largest",
		what: "the five largest of a listed ten (`get-resource-links`, count 10), and the sum of a field of them (the resource id)",
		async run(session, mode) {
			await session.listTools();
			if (mode === "code") {
				await find(session, "links to resources", LINKS);
				return program(
					session,
					[
						`const links = await codemode.everything__get_resource_links({ count: 10 });`,
						PROGRAM_IDS,
						`const largest = ids.sort((a, b) => b - a).slice(0, 5);`,
						`return { largest, sum: largest.reduce((sum, id) => sum + id, 0) };`,
					].join("\n"),
				);
			}
			if (mode === "search") await find(session, "links to resources", LINKS);
			const largest = linkedIds(await call(session, mode, LINKS, { count: 10 }))
				.sort((a, b) => b - a)
				.slice(0, 5);
			return { largest, sum: largest.reduce((sum, id) => sum + id, 0) };
		},
	},
	{
		id: "combine",
		what: "three reads combined: `get-structured-content` for each of its three cities, their mean temperature and their conditions",
		async run(session, mode) {
			await session.listTools();
			if (mode === "code") {
				await find(session, "weather of a city", WEATHER);
				return program(
					session,
					[
						`const cities = ${JSON.stringify(CITIES)};`,
						`const weather = await Promise.all(cities.map((location) => codemode.everything__get_structured_content({ location })));`,
						`const meanTemperature = weather.reduce((sum, w) => sum + w.temperature, 0) / weather.length;`,
						`return { meanTemperature, conditions: weather.map((w) => w.conditions) };`,
					].join("\n"),
				);
			}
			if (mode === "search") await find(session, "weather of a city", WEATHER);
			const weather: z.infer<typeof WeatherSchema>[] = [];
			for (const location of CITIES) {
				weather.push(WeatherSchema.parse((await call(session, mode, WEATHER, { location })).structuredContent));
			}
			const meanTemperature = weather.reduce((sum, w) => sum + w.temperature, 0) / weather.length;
			return { meanTemperature, conditions: weather.map((w) => w.conditions) };
		},
	},
	{
		id: "each",
		what: "one call per element of a list: `get-resource-links` (count 10), then `get-resource-reference` for each of the ten",
		async run(session, mode) {
			await session.listTools();
			if (mode === "code") {
				await find(session, "links to resources", LINKS);
				await find(session, "reference to a resource by id", REFERENCE);
				const texts = await program(
					session,
					[
						`const links = await codemode.everything__get_resource_links({ count: 10 });`,
						PROGRAM_IDS,
						`const texts = [];`,
						`for (const resourceId of ids) {`,
						`\tconst answer = await codemode.everything__get_resource_reference({ resourceType: "Text", resourceId });`,
						`\ttexts.push(...answer.filter((part) => part.type === "resource").map((part) => part.resource.text));`,
						`}`,
						`return texts;`,
					].join("\n"),
				);
				// The texts carry the time they were made: the modes are compared by how many came back.
				return z.array(z.string()).parse(texts).length;
			}
			if (mode === "search") {
				await find(session, "links to resources", LINKS);
				await find(session, "reference to a resource by id", REFERENCE);
			}
			const texts: string[] = [];
			for (const resourceId of linkedIds(await call(session, mode, LINKS, { count: 10 }))) {
				texts.push(...embeddedTexts(await call(session, mode, REFERENCE, { resourceType: "Text", resourceId })));
			}
			return texts.length;
		},
	},
];
