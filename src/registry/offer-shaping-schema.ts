import { z } from "zod";
import { GlobSchema } from "./tool-shaping-schema.ts";

/**
 * Which of a server's prompts and resources callers see, beside its tools
 * (tool-shaping-schema.ts): include/exclude globs, on servers over the
 * upstream's own names and URIs, on virtual servers over what its callers see
 * (`member__prompt`; URIs are not renamed by aggregation). Hidden entries are
 * neither listed nor usable: a prompts/get, resources/read or subscribe of one
 * is refused as an unknown prompt or resource is.
 */

/** A glob of a resource URI (or a template's uriTemplate): `*` any run, `/` included; `?` one character. */
const UriGlobSchema = z
	.string()
	.regex(/^[\x21-\x7e]{1,1024}$/, "must be a glob of a resource URI: 1-1024 printable characters, no spaces");

export const PromptShapingSchema = z.strictObject({
	include: z.array(GlobSchema).min(1).max(256).optional(),
	exclude: z.array(GlobSchema).max(256).optional(),
});
export type PromptShaping = z.infer<typeof PromptShapingSchema>;

/** Over resources' URIs and resource templates' uriTemplates alike. */
export const ResourceShapingSchema = z.strictObject({
	include: z.array(UriGlobSchema).min(1).max(256).optional(),
	exclude: z.array(UriGlobSchema).max(256).optional(),
});
export type ResourceShaping = z.infer<typeof ResourceShapingSchema>;
