/** One stage of the per-stage microbenchmark (stages.ts): how it is defined, and what measuring it gives. */

/** Where a stage runs on the path of one transparent tools/call, or that it is not on it. */
export type StageSection = "edge" | "session" | "workerd" | "other" | "reference";

export const SECTION_LABELS: Record<StageSection, string> = {
	edge: "edge Worker, every request",
	session: "SessionDO, every call",
	workerd: "the WebCrypto stages again, computed synchronously as workerd does (node:crypto underneath)",
	other: "other paths (a 64 KiB reply, initialize)",
	reference: "parts of the stages above, and references (not added up)",
};

export interface StageResult {
	name: string;
	/** The code measured, e.g. `src/edge/2025-11-25/session-id.ts verifySessionId`. */
	code: string;
	section: StageSection;
	/** How many times one transparent tools/call runs it; 0 for other paths, parts and references. */
	perCall: number;
	/** Whether it makes a WebCrypto call (measured again in the `workerd` section). */
	webCrypto: boolean;
	/** Timed operations (warm-up not included). */
	iterations: number;
	/** Operations per timed sample: p50 and p99 are over the samples' per-operation times. */
	batch: number;
	meanUs: number;
	p50Us: number;
	p99Us: number;
}

export interface StageOptions {
	/** Short warm-up and measurement: the whole run under 2 s. */
	quick?: boolean;
	/** Only the stages whose name or code contains this text (case-insensitive). */
	filter?: string;
	/** More stages, measured after the built-in ones. */
	extraStages?: readonly Stage[];
	/** Called after each stage (progress output). */
	onStage?: (result: StageResult) => void;
}

/** One stage as defined (see `stage`). */
export interface StageDef<T> {
	name: string;
	code: string;
	section: StageSection;
	perCall: number;
	/** The operation makes a WebCrypto call. */
	webCrypto?: boolean;
	/** Measure it with the synchronous WebCrypto installed (the `workerd` section). */
	syncWebCrypto?: boolean;
	/** A fresh input for one operation, made outside the timing (e.g. a Request with an unread body). */
	prepare?: () => T;
	/** The operation timed; a returned promise is awaited. */
	run: (input: T) => unknown;
	/** Throws when the operation's output is not what the stage is meant to measure (run once first). */
	check?: (output: unknown) => void | Promise<void>;
	/** Bound on timed operations (e.g. for stages that grow a cache). */
	maxIterations?: number;
	/** The run's warm-up times this, for code the JIT takes long to settle (a CEL program's closures). */
	warmupScale?: number;
}

/** A stage with its input type erased, ready to measure. */
export interface Stage {
	name: string;
	code: string;
	section: StageSection;
	perCall: number;
	webCrypto: boolean;
	syncWebCrypto: boolean;
	maxIterations: number | undefined;
	warmupScale: number;
	prepare: () => unknown;
	run: (input: unknown) => unknown;
	check: (output: unknown) => void | Promise<void>;
}

export function stage<T>(def: StageDef<T>): Stage {
	const prepare = def.prepare;
	return {
		name: def.name,
		code: def.code,
		section: def.section,
		perCall: def.perCall,
		webCrypto: def.webCrypto ?? false,
		syncWebCrypto: def.syncWebCrypto ?? false,
		maxIterations: def.maxIterations,
		warmupScale: def.warmupScale ?? 1,
		prepare: prepare ? () => prepare() : () => undefined,
		run: (input) => def.run(input as T),
		check: def.check ?? (() => undefined),
	};
}
