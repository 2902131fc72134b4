const compiled = new Map<string, RegExp>();

/** A glob (`*` any run, `/` included; `?` one character) as an anchored regular expression, compiled once per isolate. */
export function globMatches(glob: string, value: string): boolean {
	let pattern = compiled.get(glob);
	if (!pattern) {
		const source = glob
			.replace(/[.+^${}()|[\]\\]/g, "\\$&")
			.replace(/\*/g, ".*")
			.replace(/\?/g, ".");
		pattern = new RegExp(`^${source}$`);
		if (compiled.size < 1_000) compiled.set(glob, pattern);
	}
	return pattern.test(value);
}

/** An operator's include/exclude choice: absent, everything. */
export interface GlobChoice {
	include?: readonly string[] | undefined;
	exclude?: readonly string[] | undefined;
}

/** Whether `value` (a name, a URI) is chosen: matched by an include glob, when there are any, and by no exclude glob. */
export function chosen(choice: GlobChoice | null | undefined, value: string): boolean {
	if (!choice) return true;
	if (choice.include && !choice.include.some((glob) => globMatches(glob, value))) return false;
	return !(choice.exclude ?? []).some((glob) => globMatches(glob, value));
}
