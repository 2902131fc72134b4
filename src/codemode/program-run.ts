import { DynamicWorkerExecutor, normalizeCode, truncateResult } from "@cloudflare/codemode";
import { guardLoopsMapped, type Inserted, ProgramSyntaxError, STEP } from "./loop-guard.ts";
import { type ProgramPosition, writtenPosition } from "./program-position.ts";

/** What one program may use (docs/code-mode.md, "Limits"). */
export interface ProgramLimits {
	/** Wall-clock bound on the whole program, inner calls included. */
	timeoutMs: number;
	/** Inner tool calls one program may make. */
	maxCalls: number;
	/** Loop turns and function calls one program may make before it is stopped. */
	maxSteps: number;
	/** CPU time of the isolate, where the runtime enforces it (deployed Workers). */
	cpuMs: number;
	/** Characters of the returned value, as JSON, before it is cut. */
	maxResultChars: number;
}

/** Makes one inner call of a program: its value, or an Error whose message the program sees. */
export type InnerCall = (name: string, args: unknown) => Promise<unknown>;

/** How a program ended: its value and its console lines, or the sentence of what stopped it. */
export type ProgramOutcome =
	| { ok: true; value: unknown; logs: string[] }
	| { ok: false; error: string; logs: string[] };

/** The sandbox's namespace for tool calls, and the one function behind it. */
const NAMESPACE = "codemode";
const GATEWAY = "__gateway";
/** The wrapper's own names: the stack frames of an error, and the frame of the origin mark. */
const FRAMES = "__gatewayFrames";
const ORIGIN = "__gatewayOrigin";
/** Lines from the origin mark (`new Error().stack`) to the program's first line, in the wrapper below. */
const ORIGIN_TO_PROGRAM = 3;

/**
 * Any property of `codemode` is a call of the tool of that name, known or not:
 * the gateway, not the sandbox, says whether the caller may call it, with the
 * sentence a direct call would get (decision 0133).
 */
const PRELUDE = `    const ${NAMESPACE} = new Proxy({}, {
      get: (_, name) => typeof name === "string" ? (args) => ${GATEWAY}.call(name, args) : undefined,
    });`;

/**
 * Runs `code` (an async function body, or an async arrow function) in a fresh
 * isolate through the Worker Loader: no network (`globalOutbound: null`), no
 * bindings, no environment; each `await codemode.<tool>(args)` is `call`.
 * Never throws: a program that is not JavaScript, throws, runs too long or
 * calls too often ends as an outcome with a sentence.
 */
export async function runProgram(
	loader: WorkerLoader,
	code: string,
	call: InnerCall,
	limits: ProgramLimits,
): Promise<ProgramOutcome> {
	let normalized: string;
	let guarded: { code: string; inserted: Inserted[] };
	try {
		normalized = normalizeCode(code);
		guarded = guardLoopsMapped(normalized);
	} catch (error) {
		if (!(error instanceof ProgramSyntaxError)) throw error;
		return { ok: false, error: `The program is not valid JavaScript: ${error.message}.`, logs: [] };
	}
	// The counter's name is the gateway's, like the step's, so that a program's own `steps` is never it.
	// The program starts ORIGIN_TO_PROGRAM lines below the origin mark: a stack frame between there and its
	// last line is the program's own, and its line there is the program's (mapped back to the text as written).
	const lines = guarded.code.split("\n").length;
	const program = `async () => {
  let ${STEP}s = 0;
  const ${STEP} = () => {
    if (++${STEP}s > ${limits.maxSteps}) throw new Error(${JSON.stringify(stepsSentence(limits.maxSteps))});
  };
  const ${FRAMES} = (stack) => String(stack ?? "").split("\\n").map((line) => /([^\\s(]+):(\\d+):(\\d+)\\)?\\s*$/.exec(line)).filter((m) => m !== null);
  const [${ORIGIN}] = ${FRAMES}(new Error().stack);
  try {
    return await (
${guarded.code}
    )();
  } catch (error) {
    const first = ${ORIGIN} === undefined ? 0 : Number(${ORIGIN}[2]) + ${ORIGIN_TO_PROGRAM};
    const own = ${FRAMES}(error?.stack).find((m) => m[1] === ${ORIGIN}?.[1] && Number(m[2]) >= first && Number(m[2]) < first + ${lines});
    if (own !== undefined) await ${GATEWAY}.where(Number(own[2]) - first + 1, Number(own[3]));
    throw error instanceof Error ? error : new Error(String(error));
  }
}`;
	let calls = 0;
	let where: ProgramPosition | null = null;
	const gateway = {
		where: async (...args: unknown[]): Promise<void> => {
			const [line, column] = args;
			if (typeof line !== "number" || typeof column !== "number") return;
			where = writtenPosition(code, normalized, guarded, { line, column });
		},
		call: async (...args: unknown[]): Promise<unknown> => {
			const [name, input] = args;
			if (typeof name !== "string") throw new Error("A tool's name must be a string.");
			calls += 1;
			if (calls > limits.maxCalls) {
				throw new Error(`This program made more than ${limits.maxCalls} tool calls, the most one program may make.`);
			}
			return call(name, input ?? {});
		},
	};
	const executor = new DynamicWorkerExecutor({
		loader: withCpuLimit(loader, limits.cpuMs),
		timeout: limits.timeoutMs,
		globalOutbound: null,
	});
	const result = await executor.execute(program, [{ name: GATEWAY, fns: gateway, prelude: PRELUDE }]);
	const logs = result.logs ?? [];
	if (result.error !== undefined) return { ok: false, error: located(sentenceOf(result.error, limits), where), logs };
	return { ok: true, value: truncateResult(result.result, { maxChars: limits.maxResultChars }), logs };
}

/** A thrown error's sentence, with where the program threw it, as written. */
function located(sentence: string, where: ProgramPosition | null): string {
	if (where === null) return sentence;
	const at = where.column === undefined ? `line ${where.line}` : `line ${where.line}, column ${where.column}`;
	return `${sentence} (thrown at ${at} of the program)`;
}

function stepsSentence(maxSteps: number): string {
	return `The program was stopped after ${maxSteps} loop turns and function calls, the most one program may make: is there a loop that never ends?`;
}

/** The executor's words for its own bound, said as the gateway says things; a program's own errors as they are. */
function sentenceOf(error: string, limits: ProgramLimits): string {
	if (error === "Execution timed out") {
		return `The program was stopped after ${limits.timeoutMs} ms, its time bound: make it do less, or pass a larger timeoutMs.`;
	}
	return error;
}

/** The Loader, with a CPU limit on every isolate it loads (the executor sets none). */
function withCpuLimit(loader: WorkerLoader, cpuMs: number): WorkerLoader {
	return {
		get: (name, getCode) => loader.get(name, async () => ({ ...(await getCode()), limits: { cpuMs } })),
		load: (code) => loader.load({ ...code, limits: { cpuMs } }),
	};
}
