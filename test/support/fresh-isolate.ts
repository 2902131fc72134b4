/**
 * The gateway project's setup file. Its test files run one after another in one
 * workerd isolate (`isolate: false`: the gateway's modules are loaded once, not
 * once per file), so each file starts with the isolate's caches empty, as a
 * fresh isolate would: what one file cached under its own settings never answers
 * for the next.
 */
import { beforeAll } from "vitest";
import { forgetIsolateCaches } from "../../src/primitives/expiring-map.ts";

beforeAll(() => {
	forgetIsolateCaches();
});
