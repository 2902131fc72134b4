import { z } from "zod";

/** A task's state, as both eras name it. */
export const TaskStatusSchema = z.enum(["working", "input_required", "completed", "failed", "cancelled"]);
export type TaskStatus = z.infer<typeof TaskStatusSchema>;

/** The JSON-RPC error a failed task's call was answered with. */
const TaskErrorSchema = z.object({ code: z.number(), message: z.string(), data: z.unknown().optional() });

/**
 * A task the session holds, era-neutral: what each wire renders its own way
 * (2025-11-25 `Task`, the 2026-07-28 extension's). Parsed with this schema
 * whenever it is read from storage.
 */
export const HeldTaskSchema = z.object({
	taskId: z.string(),
	status: TaskStatusSchema,
	statusMessage: z.string().optional(),
	/** Epoch ms, from the session's injected clock. */
	createdAt: z.number(),
	lastUpdatedAt: z.number(),
	/** How long after `createdAt` the task and its result are kept. */
	ttlMs: z.number(),
	pollIntervalMs: z.number(),
	/** Once completed: the tools/call result (a result with `isError` is a completed call). */
	result: z.record(z.string(), z.unknown()).optional(),
	/** Once failed: the JSON-RPC error the call was answered with. */
	error: TaskErrorSchema.optional(),
	/** The tool as the client called it: what a failure's sentence names. */
	tool: z.string().optional(),
	/** The era of the client it was held for, when a 2026-07-28 call was promoted to it (absent: 2025). */
	era: z.literal("2026-07-28").optional(),
});
export type HeldTask = z.infer<typeof HeldTaskSchema>;

const TERMINAL: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);

/** Completed, failed and cancelled tasks never change again. */
export function isTerminal(status: TaskStatus): boolean {
	return TERMINAL.has(status);
}

/** When a task and its result are deleted. */
export function expiresAt(task: HeldTask): number {
	return task.createdAt + task.ttlMs;
}
