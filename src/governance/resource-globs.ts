import { normalizeUri, type UriForm } from "../mcp/uri-normalize.ts";
import type { ResourceShaping } from "../registry/offer-shaping-schema.ts";
import { chosen, type GlobChoice } from "./globs.ts";

/** What the operator's resource globs say of a URI or template: chosen, hidden, or not comparable (why). */
export type ResourceChoice = "chosen" | "hidden" | { refused: string };

/** Each shaping's globs in normal form, computed once per shaping object. */
const normalized = new WeakMap<ResourceShaping, GlobChoice>();

/**
 * Whether the operator's `resources` globs choose `value` (a URI, or a
 * template's uriTemplate), both compared in RFC 3986 normal form
 * (`uri-normalize.ts`): `demo://demo/notes/*` chooses `DEMO://demo/a/../notes/1`,
 * since an upstream reads that as `demo://demo/notes/1`. The globs are
 * normalised when first compared, not when written, so records stored before
 * keep working and `GET` answers what the operator wrote.
 */
export function chooseResource(choice: ResourceShaping, value: string, form: UriForm): ResourceChoice {
	const normal = normalizeUri(value, form);
	if ("refused" in normal) return normal;
	return chosen(normalGlobs(choice), normal.normal) ? "chosen" : "hidden";
}

function normalGlobs(choice: ResourceShaping): GlobChoice {
	let globs = normalized.get(choice);
	if (!globs) {
		globs = { include: choice.include?.map(normalGlob), exclude: choice.exclude?.map(normalGlob) };
		normalized.set(choice, globs);
	}
	return globs;
}

/** A glob in normal form; one stored before globs had to normalise (PUT refuses them now) is compared as written. */
function normalGlob(glob: string): string {
	const normal = normalizeUri(glob, "glob");
	return "normal" in normal ? normal.normal : glob;
}
