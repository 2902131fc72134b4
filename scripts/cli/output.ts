/** What the CLI prints: aligned tables for people, JSON for scripts. */

/** A cell: lists joined with commas, absent as "-", objects as compact JSON. */
function cell(value: unknown): string {
	if (value === undefined || value === null) return "-";
	if (Array.isArray(value)) return value.length === 0 ? "-" : value.map(cell).join(",");
	if (typeof value === "object") return JSON.stringify(value);
	return String(value);
}

/**
 * Rows as a table with the given columns (`[heading, field]`), each column as
 * wide as its widest cell.
 *
 * @example table([{ name: "demo", url: "http://…" }], [["NAME", "name"], ["URL", "url"]])
 */
export function table(
	rows: readonly Record<string, unknown>[],
	columns: ReadonlyArray<readonly [string, string]>,
): string {
	if (rows.length === 0) return "(none)";
	const cells = rows.map((row) => columns.map(([, field]) => cell(row[field])));
	const widths = columns.map(([heading], index) =>
		Math.max(heading.length, ...cells.map((line) => line[index]?.length ?? 0)),
	);
	const render = (line: string[]) =>
		line
			.map((text, index) => text.padEnd(widths[index] ?? 0))
			.join("  ")
			.trimEnd();
	return [render(columns.map(([heading]) => heading)), ...cells.map(render)].join("\n");
}

/** One record as `field: value` lines. */
export function details(record: Record<string, unknown>): string {
	const width = Math.max(...Object.keys(record).map((key) => key.length));
	return Object.entries(record)
		.map(([key, value]) => `${`${key}:`.padEnd(width + 1)} ${cell(value)}`)
		.join("\n");
}

export function printJson(value: unknown): void {
	process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
