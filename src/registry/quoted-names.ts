/**
 * Names quoted for a refusal's sentence, each unknown one with the known name it
 * most likely meant: `'demoo' (did you mean 'demo'?), 'zzz'`. One wording for the
 * admin API's refusals, zod's unknown fields and `mcpgw plan`.
 */
import { closestName } from "../primitives/closest-name.ts";

/** `'demoo' (did you mean 'demo'?)`, or `'demoo'` without a suggestion. */
export function quotedName(name: string, suggestion: string | null | undefined, quote = "'"): string {
	const quoted = `${quote}${name}${quote}`;
	return suggestion ? `${quoted} (did you mean ${quote}${suggestion}${quote}?)` : quoted;
}

/** `'a', 'b'`; with `known`, each name that is not known followed by the closest known one, if one is close. */
export function quoteList(names: readonly string[], known?: Iterable<string>, quote = "'"): string {
	const candidates = known === undefined ? undefined : [...known];
	return names
		.map((name) => {
			const suggestion = candidates && !candidates.includes(name) ? closestName(name, candidates) : undefined;
			return quotedName(name, suggestion, quote);
		})
		.join(", ");
}
