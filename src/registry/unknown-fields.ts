/**
 * Unknown fields in what an operator writes (admin bodies, gateway.config.json)
 * are named with the field most likely meant: `unknown field "timeout" (did you
 * mean "timeoutSeconds"?)`. Every body schema is a `z.strictObject`, and zod's
 * own message ("Unrecognized key") names neither; the object that refused the
 * key knows its fields, so zod's error map, consulted with that object, words it.
 * Installed once for the process by importing this module (schemas.ts does);
 * every other issue keeps zod's message. See docs/decisions/0067.
 */
import { z } from "zod";
import { closestName } from "../primitives/closest-name.ts";
import { quoteList } from "./quoted-names.ts";

/** `unknown field "timeout" (did you mean "timeoutSeconds"?)`, or the known fields when none is close. */
export function unknownFieldsMessage(keys: readonly string[], known: readonly string[]): string {
	const suggested = keys.some((key) => closestName(key, known) !== undefined);
	const fields = suggested ? "" : `; the fields are ${known.join(", ")}`;
	return `unknown field${keys.length === 1 ? "" : "s"} ${quoteList(keys, known, '"')}${fields}`;
}

z.config({
	customError: (issue) => {
		if (issue.code !== "unrecognized_keys" || !(issue.inst instanceof z.core.$ZodObject)) return undefined;
		return unknownFieldsMessage(issue.keys, Object.keys(issue.inst._zod.def.shape));
	},
});
