import type { JSONRPCRequest } from "@modelcontextprotocol/sdk/types.js";
import type { Member } from "../binding.ts";
import type { RunningCall } from "../running-call.ts";
import type { HeldTasks } from "./held-tasks.ts";
import { answerTaskRequest, withoutTask } from "./legacy-task-wire.ts";
import type { UpstreamTasks } from "./upstream-tasks.ts";

/** What a client's request is, for tasks, before the session routes it. */
export type TaskRoute =
	/** Answered by the tasks wire. */
	| { answered: Response }
	/** To route as usual: `holder` is the member whose upstream runs it as its own task, null for a plain call. */
	| { message: JSONRPCRequest; holder: Member | null };

/**
 * The one place a 2025-11-25 request meets the tasks: for a client the
 * session holds tasks for (`holds`), a request naming an upstream's task goes
 * to it, `tasks/list` lists both kinds, a task-augmented call of a tool its
 * upstream runs as a task goes on as one, any other is held and answered at
 * once, and `tasks/*` of held tasks are answered here. Every other request,
 * and any of a client the session holds no tasks for, goes on without
 * `params.task` (the spec's rule for a receiver that did not declare tasks).
 */
export async function routeTaskRequest(
	holds: boolean,
	tasks: HeldTasks,
	upstream: UpstreamTasks,
	message: JSONRPCRequest,
	call: RunningCall,
): Promise<TaskRoute> {
	if (!holds) return { message: withoutTask(message), holder: null };
	const passed = await upstream.answer(message, call);
	if (passed) return { answered: passed };
	if (message.method === "tasks/list") return { answered: call.answered(await upstream.list(message, tasks)) };
	const holder = await upstream.holder(message);
	if (holder) return { message, holder };
	const answered = await answerTaskRequest(tasks, message, call);
	return answered ? { answered } : { message: withoutTask(message), holder: null };
}
