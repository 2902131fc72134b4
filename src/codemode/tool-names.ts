import { sanitizeToolName } from "@cloudflare/codemode";

/**
 * The endpoint's name of the tool a program wrote as `codemode.<written>`:
 * the tool of exactly that name, else the one callable tool whose name the
 * sandbox spells so (`-` and `.` become `_`), else, for a namespaced name,
 * the server part with its `_` back to `-` (server names have no `_`), so a
 * tool the caller may not see is refused as its direct call would be.
 */
export function endpointToolName(written: string, callable: readonly string[]): string {
	if (callable.includes(written)) return written;
	const spelled = callable.filter((name) => sanitizeToolName(name) === written);
	if (spelled.length === 1 && spelled[0] !== undefined) return spelled[0];
	const split = written.indexOf("__");
	if (split <= 0) return written;
	return `${written.slice(0, split).replaceAll("_", "-")}${written.slice(split)}`;
}
