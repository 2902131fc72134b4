import type { z } from "zod";
import { PolicyFieldsSchema } from "../registry/policy-records.ts";
import { compileExpression } from "./cel-program.ts";

export {
	MAX_EXPRESSION_CHARS,
	type PolicyApplies,
	type PolicyInput,
	type PolicyRecord,
	PolicyRecordSchema,
} from "../registry/policy-records.ts";

/**
 * The body of `PUT /admin/policies/:name`: `{ expression (≤ 2,000
 * characters), effect: "allow" | "deny" | "confirm", applies?: { servers?,
 * virtualServers?, keys?, rules? }, priority? (100) }`, refused with the
 * compiler's message when the expression does not compile, nests too deep, or
 * names what a policy cannot see. The registry's record shape
 * (policy-records.ts) is the same without the compiler, which the registry
 * may not import.
 */
export const PolicyInputSchema = PolicyFieldsSchema.superRefine((input, context) => {
	const compiled = compileExpression(input.expression);
	if (!compiled.ok) context.addIssue({ code: "custom", path: ["expression"], message: compiled.message });
});
export type PolicyBody = z.output<typeof PolicyInputSchema>;
