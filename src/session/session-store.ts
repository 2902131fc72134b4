import { type SessionBinding, SessionBindingSchema } from "./binding.ts";
import { type HeldTask, HeldTaskSchema } from "./tasks/held-task.ts";

const BINDING_KEY = "binding";
/** One key per held task: `task:<taskId>`. */
const TASK_PREFIX = "task:";

/**
 * The SessionDO's storage, behind a narrow interface that counts every
 * operation, so tests and benchmarks can assert what a session costs.
 */
export class SessionStore {
	reads = 0;
	writes = 0;

	constructor(private readonly storage: DurableObjectStorage) {}

	async readBinding(): Promise<SessionBinding | null> {
		this.reads++;
		const raw = await this.storage.get(BINDING_KEY);
		if (raw === undefined) return null;
		const parsed = SessionBindingSchema.safeParse(raw);
		if (!parsed.success) {
			// A binding this code cannot read is treated as no session, never as a guess.
			console.error(`session binding unreadable: ${parsed.error.issues[0]?.message}`);
			return null;
		}
		return parsed.data;
	}

	async writeBinding(binding: SessionBinding): Promise<void> {
		this.writes++;
		await this.storage.put(BINDING_KEY, binding);
	}

	/** Every task this session holds (one read), each parsed; one this code cannot read is left out and logged. */
	async readTasks(): Promise<HeldTask[]> {
		this.reads++;
		const stored = await this.storage.list({ prefix: TASK_PREFIX });
		const tasks: HeldTask[] = [];
		for (const [key, raw] of stored) {
			const parsed = HeldTaskSchema.safeParse(raw);
			if (parsed.success) tasks.push(parsed.data);
			else console.error(`held task ${key} unreadable: ${parsed.error.issues[0]?.message}`);
		}
		return tasks;
	}

	/** One write: a task created, or its state changed. */
	async writeTask(task: HeldTask): Promise<void> {
		this.writes++;
		await this.storage.put(TASK_PREFIX + task.taskId, task);
	}

	/** One write however many tasks go (expired together, or forgotten). */
	async deleteTasks(taskIds: readonly string[]): Promise<void> {
		if (taskIds.length === 0) return;
		this.writes++;
		// Storage deletes at most 128 keys per call.
		for (let i = 0; i < taskIds.length; i += 128) {
			await this.storage.delete(taskIds.slice(i, i + 128).map((taskId) => TASK_PREFIX + taskId));
		}
	}

	async scheduleAlarm(at: number): Promise<void> {
		this.writes++;
		await this.storage.setAlarm(at);
	}

	/** Deletes the binding and the alarm: nothing of the session remains. */
	async clear(): Promise<void> {
		this.writes++;
		await this.storage.deleteAlarm();
		await this.storage.deleteAll();
	}
}
