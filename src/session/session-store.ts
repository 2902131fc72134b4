import { type SessionBinding, SessionBindingSchema } from "./binding.ts";

const BINDING_KEY = "binding";

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
