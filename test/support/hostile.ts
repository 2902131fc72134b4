import { inject } from "vitest";
import type { HostileLogEntry } from "../../scripts/fixtures/control-shapes.ts";
import { admin, uniqueName } from "./gateway.ts";

export type { HostileLogEntry };

export function hostileBase(): string {
	return `http://127.0.0.1:${inject("hostilePort")}`;
}

/** The URL of a behaviour, tagged so a test finds its own requests in the shared log. */
export function hostileUrl(behaviour: string, tag: string, query: Record<string, string> = {}): string {
	return `${hostileBase()}/${behaviour}/mcp?${new URLSearchParams({ tag, ...query })}`;
}

/** Registers a hostile behaviour as a server under a fresh name; returns the name and the tag of its requests. */
export async function registerHostile(
	behaviour: string,
	query: Record<string, string> = {},
	headers: Record<string, string> = {},
): Promise<{ name: string; tag: string }> {
	const name = uniqueName(behaviour);
	const tag = uniqueName("tag");
	// No check on registering: the log then holds only what the test's own traffic caused.
	const response = await admin("PUT", `/servers/${name}?check=false`, {
		url: hostileUrl(behaviour, tag, query),
		headers,
	});
	if (response.status !== 201)
		throw new Error(`registering ${name} failed: ${response.status} ${await response.text()}`);
	return { name, tag };
}

/** Every request the hostile upstream received with this tag, in order. */
export async function hostileLog(tag: string): Promise<HostileLogEntry[]> {
	const entries = (await (await fetch(`${hostileBase()}/_log`)).json()) as HostileLogEntry[];
	return entries.filter((entry) => entry.query.tag === tag);
}
