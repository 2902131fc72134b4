/**
 * SIGINT and SIGTERM as two promises: the first asks the connector to drain,
 * a second one to stop draining and go now.
 */
const SIGNALS = ["SIGINT", "SIGTERM"] as const;

export class StopSignals {
	readonly first: Promise<"stop">;
	readonly second: Promise<"stop">;
	#count = 0;
	#resolveFirst: (value: "stop") => void = () => {};
	#resolveSecond: (value: "stop") => void = () => {};
	readonly #listener = (signal: NodeJS.Signals) => {
		this.#count += 1;
		if (this.#count === 1) this.#resolveFirst("stop");
		else this.#resolveSecond("stop");
		void signal;
	};

	constructor() {
		this.first = new Promise((resolve) => {
			this.#resolveFirst = resolve;
		});
		this.second = new Promise((resolve) => {
			this.#resolveSecond = resolve;
		});
		for (const signal of SIGNALS) process.on(signal, this.#listener);
	}

	dispose(): void {
		for (const signal of SIGNALS) process.off(signal, this.#listener);
	}
}
