import { type Node, parse } from "acorn";

/**
 * The name of the step counter a guarded program calls. Its leading
 * underscores keep it out of the way of names a program would choose.
 */
export const STEP = "__gatewayStep";

/** A program that is not JavaScript: its parser's sentence, with the line and column. */
export class ProgramSyntaxError extends Error {}

/** One text to put in at an offset: an opening (a step call) or the closing of a wrapped piece, at a nesting depth. */
interface Insertion {
	at: number;
	text: string;
	closing: boolean;
	depth: number;
}

/**
 * `source` (an async arrow function, as `normalizeCode` makes it) with a call
 * to STEP at the start of every loop body and every function body, so that
 * a program that never waits is stopped after a bounded number of steps.
 * A Worker's CPU limit stops such a program when deployed; workerd run
 * locally enforces no CPU limit, and a busy loop there holds the whole
 * process (decision 0132), so the count is the bound everywhere.
 */
export function guardLoops(source: string): string {
	return guardLoopsMapped(source).code;
}

/** A piece of text the guard put in: where in the source, and how long. */
export interface Inserted {
	at: number;
	length: number;
}

/** `guardLoops`, with what it put in where, so that a place in the guarded program maps back to the source (`sourceOffset`). */
export function guardLoopsMapped(source: string): { code: string; inserted: Inserted[] } {
	let program: Node;
	try {
		program = parse(source, { ecmaVersion: "latest", sourceType: "module" });
	} catch (error) {
		throw new ProgramSyntaxError(error instanceof Error ? error.message : String(error));
	}
	const insertions: Insertion[] = [];
	visit(program, insertions, 0);
	// In source order; at one offset, closings first (the innermost first), then openings (the outermost first).
	insertions.sort(
		(a, b) =>
			a.at - b.at || Number(b.closing) - Number(a.closing) || (a.closing ? b.depth - a.depth : a.depth - b.depth),
	);
	let guarded = "";
	let from = 0;
	for (const { at, text } of insertions) {
		guarded += source.slice(from, at) + text;
		from = at;
	}
	return {
		code: guarded + source.slice(from),
		inserted: insertions.map(({ at, text }) => ({ at, length: text.length })),
	};
}

/** The source offset of a guarded program's offset `guarded` (one inside an insertion: where it was put in). */
export function sourceOffset(guarded: number, inserted: readonly Inserted[]): number {
	let added = 0;
	for (const { at, length } of inserted) {
		const start = at + added;
		if (guarded < start) break;
		if (guarded < start + length) return at;
		added += length;
	}
	return guarded - added;
}

const STEP_CALL = `${STEP}();`;
const LOOPS = new Set(["ForStatement", "ForInStatement", "ForOfStatement", "WhileStatement", "DoWhileStatement"]);
const FUNCTIONS = new Set(["FunctionDeclaration", "FunctionExpression", "ArrowFunctionExpression"]);

function visit(node: Node, insertions: Insertion[], depth: number): void {
	// acorn's Node type names only what every node has; a node's children are its other fields, read as they come.
	const body: unknown = Reflect.get(node, "body");
	if (isNode(body) && (LOOPS.has(node.type) || FUNCTIONS.has(node.type))) {
		if (body.type === "BlockStatement") insertions.push({ at: body.start + 1, text: STEP_CALL, closing: false, depth });
		else {
			// A loop's single statement becomes a block; an arrow's expression body, the step and then its value.
			const [open, close] = LOOPS.has(node.type) ? [`{${STEP_CALL}`, "}"] : [`(${STEP}(), `, ")"];
			insertions.push(
				{ at: body.start, text: open, closing: false, depth },
				{ at: body.end, text: close, closing: true, depth },
			);
		}
	}
	for (const value of Object.values(node)) {
		if (Array.isArray(value)) {
			for (const item of value) if (isNode(item)) visit(item, insertions, depth + 1);
		} else if (isNode(value)) visit(value, insertions, depth + 1);
	}
}

function isNode(value: unknown): value is Node {
	return typeof value === "object" && value !== null && "type" in value && typeof value.type === "string";
}
