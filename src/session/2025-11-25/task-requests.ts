import type { SessionRequest } from "../../mcp/client-message.ts";
import { taskAsked } from "../../mcp/message-accessors.ts";
import { TASKS_CANCEL, TASKS_GET, TASKS_LIST, TASKS_RESULT, TOOLS_CALL } from "../../mcp/methods.ts";
import type { Member } from "../binding.ts";
import type { RunningCall } from "../running-call.ts";
import type { HeldTasks } from "../tasks/held-tasks.ts";
import { answerTaskRequest, withoutTask } from "./task-wire.ts";
import type { UpstreamTasks } from "./upstream-tasks.ts";

/** What a client's request is, for tasks, before the session routes it. */
export type TaskRoute =
	/** Answered by the tasks wire. */
	| { answered: Response }
	/** To route as usual: `holder` is the member whose upstream runs it as its own task, null for a plain call. */
	| { request: SessionRequest; holder: Member | null };

/**
 * Whether a request meets the tasks at all: a method of the 2025-11-25 tasks
 * wire, or a `tools/call` that asks to be made a task (`params.task`). Any
 * other request, a plain call among them, goes on as it came whether or not
 * the session holds tasks, so it never passes `routeTaskRequest` (invariant
 * "A feature nobody configured costs a call nothing").
 */
export function meetsTasks(request: SessionRequest): boolean {
	switch (request.method) {
		case TASKS_GET:
		case TASKS_RESULT:
		case TASKS_LIST:
		case TASKS_CANCEL:
			return true;
		case TOOLS_CALL:
			return taskAsked(request);
		default:
			return false;
	}
}

/**
 * The one place a 2025-11-25 request that meets the tasks (`meetsTasks`) is
 * routed: for a client the session holds tasks for (`holds`), a request
 * naming an upstream's task goes to it, `tasks/list` lists both kinds, a
 * task-augmented call of a tool its upstream runs as a task goes on as one,
 * any other is held and answered at once, and `tasks/*` of held tasks are
 * answered here. A task-augmented call of a client the session holds no
 * tasks for goes on without `params.task` (the spec's rule for a receiver
 * that did not declare tasks); its `tasks/*` go on as they came.
 */
export async function routeTaskRequest(
	holds: boolean,
	tasks: HeldTasks,
	upstream: UpstreamTasks,
	request: SessionRequest,
	call: RunningCall,
): Promise<TaskRoute> {
	if (!holds) return { request: withoutTask(request), holder: null };
	const passed = await upstream.answer(request, call);
	if (passed) return { answered: passed };
	if (request.method === TASKS_LIST) return { answered: call.answered(await upstream.list(request.message, tasks)) };
	const holder = request.method === TOOLS_CALL ? await upstream.holder(request) : null;
	if (holder) return { request, holder };
	const answered = await answerTaskRequest(tasks, request, call);
	return answered ? { answered } : { request: withoutTask(request), holder: null };
}
