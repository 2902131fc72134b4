import { DynamicWorkerExecutor, normalizeCode, truncateResult } from "@cloudflare/codemode";
import { guardLoops, ProgramSyntaxError, STEP } from "./loop-guard.ts";

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
	let guarded: string;
	try {
		guarded = guardLoops(normalizeCode(code));
	} catch (error) {
		if (!(error instanceof ProgramSyntaxError)) throw error;
		return { ok: false, error: `The program is not valid JavaScript: ${error.message}.`, logs: [] };
	}
	// The counter's name is the gateway's, like the step's, so that a program's own `steps` is never it.
	const program = `async () => {
  let ${STEP}s = 0;
  const ${STEP} = () => {
    if (++${STEP}s > ${limits.maxSteps}) throw new Error(${JSON.stringify(stepsSentence(limits.maxSteps))});
  };
  return await (${guarded})();
}`;
	let calls = 0;
	const gateway = {
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
	if (result.error !== undefined) return { ok: false, error: sentenceOf(result.error, limits), logs };
	return { ok: true, value: truncateResult(result.result, { maxChars: limits.maxResultChars }), logs };
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
