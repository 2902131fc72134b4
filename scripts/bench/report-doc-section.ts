/** Writing a generated section into a hand-written doc: the tool-search and code-mode figures. */

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

/**
 * Replaces the section of the file at `path` that `lines` starts with (its `## ` heading) up to the
 * next `## ` heading or the end, keeping everything else (written by hand); appends it when the file
 * has none; starts the file with `title` when it is missing.
 */
export function writeDocSection(path: string, lines: readonly string[], title: string): void {
	const heading = lines[0] ?? "";
	const section = `${lines.join("\n").trimEnd()}\n`;
	const current = existsSync(path) ? readFileSync(path, "utf8") : `${title}\n`;
	const at = current.indexOf(`\n${heading}\n`);
	if (at < 0) {
		writeFileSync(path, `${current.trimEnd()}\n\n${section}`);
	} else {
		const next = current.indexOf("\n## ", at + heading.length + 1);
		const below = next < 0 ? "" : `\n${current.slice(next + 1)}`;
		writeFileSync(path, `${current.slice(0, at + 1)}${section}${below}`);
	}
	// The file is checked by `npm run lint` like any hand-written doc: its tables padded as Biome pads them.
	const biome = createRequire(import.meta.url).resolve("@biomejs/biome/bin/biome");
	execFileSync(process.execPath, [biome, "format", "--write", path], { stdio: "ignore" });
}
