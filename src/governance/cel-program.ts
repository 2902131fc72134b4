import { type CelInput, type CelResult, celEnv, isCelError, parse, plan } from "@bufbuild/cel";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { TOOLS_CALL } from "../mcp/methods.ts";
import { MAX_EXPRESSION_CHARS } from "../registry/policy-records.ts";
import { BOUNDED_MATCHES, patternProblem } from "./cel-patterns.ts";
import { TIMESTAMP_ACCESSORS } from "./cel-time.ts";

/**
 * One policy expression, compiled: parsed by `@bufbuild/cel` (the CEL spec's
 * conformance-tested implementation), checked against what a policy can see,
 * bounded in nesting, and planned once into a function evaluated per request.
 * The standard library only: the strings extension's `replace` and friends
 * let an expression grow a caller's argument into something much larger.
 */

/** Deepest nesting of an expression (brackets, calls, operators, selections). The parser recurses once per level. */
export const MAX_NESTING = 32;

/**
 * A comprehension (`all`, `exists`, `exists_one`, `map`, `filter`) may not
 * contain another: each costs as much as the list it walks, which a caller's
 * arguments make as long as they like, and nested they multiply.
 */
export const MAX_COMPREHENSION_NESTING = 1;

/**
 * What an expression sees, and the fields of those that are records of ours;
 * null: a value (string) or a map of the caller's or the server's choosing.
 */
const VARIABLES: Readonly<Record<string, readonly string[] | null>> = {
	principal: ["kind", "id", "subject", "email", "groups", "rule", "keyName"],
	server: null,
	tool: ["name", "realName", "annotations"],
	arguments: null,
	method: null,
	request: ["time"],
};
const VARIABLE_NAMES = Object.keys(VARIABLES).join(", ");

/** Operators the planner evaluates itself rather than as library functions. */
const PLANNER_OPERATORS = new Set([
	"_&&_",
	"_||_",
	"_?_:_",
	"_[_]",
	"_[?_]",
	"_?._",
	"@not_strictly_false",
	"__not_strictly_false__",
]);

/**
 * The standard library, its timestamp accessors replaced by ones that keep their time zone formats
 * (cel-time.ts) and `matches()` by one that reads a text of bounded length (cel-patterns.ts).
 */
const ENV = celEnv({ funcs: [...TIMESTAMP_ACCESSORS, BOUNDED_MATCHES] });

type Expr = ReturnType<typeof parse>["expr"];

/** What an expression is evaluated against: the variables above, as CEL inputs. */
export type CelBindings = Readonly<Record<keyof typeof VARIABLES, CelInput>>;

/** A compiled expression: evaluate it once per request; never throws (errors are CEL errors). */
export type CelProgram = (bindings: CelBindings) => CelResult;

export type Compiled = { ok: true; program: CelProgram } | { ok: false; message: string };

/** An evaluation to try at compile time: an expression that gives something other than true or false here is refused. */
const SAMPLE: CelBindings = {
	principal: { kind: "key", id: "", subject: null, email: null, groups: [], rule: null, keyName: null },
	server: "",
	tool: { name: "", realName: "", annotations: {} },
	arguments: {},
	method: TOOLS_CALL,
	request: { time: timestampFromMs(0) },
};

/**
 * Compiles `source`, or says why not in a sentence: the parser's message for
 * a syntax error (with line and column), or the bound or the name that it
 * breaks. Refused here, an expression never reaches a request.
 */
export function compileExpression(source: string): Compiled {
	if (source.length > MAX_EXPRESSION_CHARS) {
		return { ok: false, message: `is longer than ${MAX_EXPRESSION_CHARS} characters` };
	}
	if (bracketDepth(source) > MAX_NESTING) return { ok: false, message: nestingMessage() };
	let parsed: ReturnType<typeof parse>;
	try {
		parsed = parse(source);
	} catch (error) {
		if (error instanceof RangeError) return { ok: false, message: nestingMessage() };
		return { ok: false, message: `does not compile: ${error instanceof Error ? error.message : String(error)}` };
	}
	const problem = checkExpr(parsed.expr, new Set(), 1, 0);
	if (problem) return { ok: false, message: problem };
	let program: CelProgram;
	try {
		const planned = plan(ENV, parsed);
		program = (bindings) => planned(bindings);
	} catch (error) {
		return { ok: false, message: `does not compile: ${error instanceof Error ? error.message : String(error)}` };
	}
	const sample = program(SAMPLE);
	if (!isCelError(sample) && typeof sample !== "boolean") {
		return { ok: false, message: `must evaluate to true or false, and gives a ${celTypeName(sample)}` };
	}
	return { ok: true, program };
}

function nestingMessage(): string {
	return `nests deeper than ${MAX_NESTING} levels (the limit on an expression's nesting)`;
}

/**
 * The deepest nesting of brackets outside string literals, found before the
 * parser runs: it recurses once per level and would exhaust the stack on a
 * few hundred.
 */
function bracketDepth(source: string): number {
	let depth = 0;
	let deepest = 0;
	for (let i = 0; i < source.length; i++) {
		const char = source[i];
		if (char === '"' || char === "'") {
			const triple = source.startsWith(char.repeat(3), i);
			const close = triple ? char.repeat(3) : char;
			i += close.length;
			while (i < source.length && !source.startsWith(close, i)) i += source[i] === "\\" ? 2 : 1;
			i += close.length - 1;
		} else if (char === "(" || char === "[" || char === "{") {
			depth++;
			if (depth > deepest) deepest = depth;
		} else if (char === ")" || char === "]" || char === "}") {
			depth--;
		}
	}
	return deepest;
}

/**
 * The first reason the expression cannot run as a policy: too deep, nested
 * comprehensions, a name it cannot see, a field our records do not have, a
 * function the library does not have. `scope` holds comprehension variables.
 */
function checkExpr(expr: Expr, scope: ReadonlySet<string>, depth: number, comprehensions: number): string | null {
	if (depth > MAX_NESTING) return nestingMessage();
	const next = (child: Expr | undefined, inner = scope, nested = comprehensions) =>
		child ? checkExpr(child, inner, depth + 1, nested) : null;
	const kind = expr.exprKind;
	switch (kind.case) {
		case "identExpr":
			if (scope.has(kind.value.name) || Object.hasOwn(VARIABLES, kind.value.name)) return null;
			return `uses '${kind.value.name}', which a policy does not see (it sees ${VARIABLE_NAMES})`;
		case "selectExpr": {
			const operand = kind.value.operand;
			if (operand?.exprKind.case === "identExpr" && !scope.has(operand.exprKind.value.name)) {
				const fields = VARIABLES[operand.exprKind.value.name];
				if (fields && !fields.includes(kind.value.field)) {
					const name = operand.exprKind.value.name;
					return `uses ${name}.${kind.value.field}, and ${name} has no field '${kind.value.field}' (it has ${fields.join(", ")})`;
				}
			}
			return next(operand);
		}
		case "callExpr": {
			const call = kind.value;
			if (!PLANNER_OPERATORS.has(call.function) && ENV.funcs.find(call.function) === undefined) {
				return `calls ${call.function}(), which is not a function of CEL's standard library`;
			}
			if (call.function === "matches") {
				const problem = matchesProblem(call.target ? call.args[0] : call.args[1]);
				if (problem) return problem;
			}
			for (const child of [call.target, ...call.args]) {
				const problem = next(child);
				if (problem) return problem;
			}
			return null;
		}
		case "listExpr":
			for (const element of kind.value.elements) {
				const problem = next(element);
				if (problem) return problem;
			}
			return null;
		case "structExpr":
			for (const entry of kind.value.entries) {
				const problem = (entry.keyKind.case === "mapKey" ? next(entry.keyKind.value) : null) ?? next(entry.value);
				if (problem) return problem;
			}
			return null;
		case "comprehensionExpr": {
			const loop = kind.value;
			if (comprehensions + 1 > MAX_COMPREHENSION_NESTING) {
				return "nests a comprehension (all, exists, exists_one, map, filter) inside another; their cost would multiply with the size of the arguments";
			}
			const inner = new Set([...scope, loop.iterVar, loop.accuVar, ...(loop.iterVar2 ? [loop.iterVar2] : [])]);
			const nested = comprehensions + 1;
			const problem =
				next(loop.iterRange) ??
				next(loop.accuInit) ??
				next(loop.loopCondition, inner, nested) ??
				next(loop.loopStep, inner, nested) ??
				next(loop.result, inner, nested);
			if (problem) return problem;
			const steps = [loop.loopCondition, loop.loopStep, loop.result];
			if (readsArguments(loop.iterRange, scope) && steps.some((step) => readsArguments(step, inner))) {
				return "walks the call's arguments and reads them again at each step (all, exists, exists_one, map, filter); its cost would grow with the square of their size";
			}
			return null;
		}
		default:
			return null;
	}
}

/**
 * Why the pattern of a `matches()` call cannot be used, or null: it must be a
 * string written in the policy (a caller who chose the pattern would choose
 * what compiling it costs), within the size cel-patterns.ts allows, and compile.
 */
function matchesProblem(pattern: Expr | undefined): string | null {
	const kind = pattern?.exprKind;
	if (kind?.case !== "constExpr" || kind.value.constantKind.case !== "stringValue") {
		return "calls matches() with a pattern that is not a string written in the policy; a pattern taken from the request would let a caller choose what it costs";
	}
	return patternProblem(kind.value.constantKind.value);
}

/**
 * Whether `expr` reads `arguments` (not a comprehension variable of that
 * name). Called only on expressions `checkExpr` found within MAX_NESTING.
 */
function readsArguments(expr: Expr | undefined, scope: ReadonlySet<string>): boolean {
	if (!expr) return false;
	const kind = expr.exprKind;
	switch (kind.case) {
		case "identExpr":
			return kind.value.name === "arguments" && !scope.has("arguments");
		case "selectExpr":
			return readsArguments(kind.value.operand, scope);
		case "callExpr":
			return [kind.value.target, ...kind.value.args].some((child) => readsArguments(child, scope));
		case "listExpr":
			return kind.value.elements.some((element) => readsArguments(element, scope));
		case "structExpr":
			return kind.value.entries.some(
				(entry) =>
					(entry.keyKind.case === "mapKey" && readsArguments(entry.keyKind.value, scope)) ||
					readsArguments(entry.value, scope),
			);
		case "comprehensionExpr": {
			const loop = kind.value;
			const inner = new Set([...scope, loop.iterVar, loop.accuVar, ...(loop.iterVar2 ? [loop.iterVar2] : [])]);
			return (
				readsArguments(loop.iterRange, scope) ||
				readsArguments(loop.accuInit, scope) ||
				[loop.loopCondition, loop.loopStep, loop.result].some((step) => readsArguments(step, inner))
			);
		}
		default:
			return false;
	}
}

/** The CEL type's name of an evaluation result that is not a boolean, for a refusal. */
function celTypeName(value: unknown): string {
	if (value === null) return "null";
	if (typeof value === "string") return "string";
	if (typeof value === "bigint") return "int";
	if (typeof value === "number") return "double";
	return "value that is not a boolean";
}
