/**
 * What the deployed bundle gets for zod's `locales` (wrangler.toml `[alias]`): English only.
 *
 * zod's index re-exports every locale (`export * as locales`), and the namespace objects that
 * `import { z } from "zod"` and @hono/zod-openapi materialise keep all of them in the bundle:
 * about 357 KiB no one calls. Messages are English by zod's own default (registered from
 * `locales/en.js` when the first schema is built, not through this index), so replacing the index
 * changes no message; `z.locales.en` still answers. `npm run deploy-check` fails if the other
 * locales come back (docs/decisions/0052-zod-s-locales-are-aliased-to-english-in-the-bundle.md).
 */
export { default as en } from "zod/v4/locales/en.js";
