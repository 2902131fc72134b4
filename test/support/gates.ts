import { onTestFinished } from "vitest";
import type { GateStatus } from "../../scripts/fixtures/control-shapes.ts";
import { eventually } from "./eventually.ts";
import { uniqueName } from "./gateway.ts";

export type { GateStatus };

/**
 * A gate of an upstream's `gate` tool (scripts/fixtures/upstream-server.ts): a call
 * to it is under way, at the upstream, until the test releases the gate.
 */
export interface Gate {
	readonly name: string;
	/** A `tools/call` of `tool` (the gate tool, `gate`, or its aggregate name) that waits at this gate. */
	call(id: number | string, tool?: string, meta?: Record<string, unknown>): Record<string, unknown>;
	status(): Promise<GateStatus>;
	/** Resolves once `count` calls are waiting at the gate. */
	arrived(count?: number): Promise<GateStatus>;
	/** Lets every waiting call, and any later one, through. */
	release(): Promise<void>;
}

/**
 * A new gate on the upstream at `base` (`http://127.0.0.1:<port>`). It is
 * released when the test ends, however it ends, so no call is left waiting.
 */
export function newGate(
	base: string,
	fetcher: (url: string, init?: RequestInit) => Promise<Response> = (url, init) => fetch(url, init),
): Gate {
	const name = uniqueName("gate");
	const url = `${base}/_gates/${name}`;
	const status = async () => {
		const response = await fetcher(url);
		if (!response.ok) throw new Error(`gate ${name}: ${response.status} ${await response.text()}`);
		return (await response.json()) as GateStatus;
	};
	const release = async () => {
		const response = await fetcher(`${url}/release`, { method: "POST" });
		if (!response.ok) throw new Error(`releasing gate ${name}: ${response.status} ${await response.text()}`);
		await response.body?.cancel();
	};
	// An upstream that is gone by then (crashed, stopped) holds no call: nothing to release.
	onTestFinished(() => release().catch(() => {}));
	return {
		name,
		call: (id, tool = "gate", meta) => ({
			jsonrpc: "2.0",
			id,
			method: "tools/call",
			params: { name: tool, arguments: { name }, ...(meta ? { _meta: meta } : {}) },
		}),
		status,
		arrived: (count = 1) =>
			eventually(async () => {
				const seen = await status();
				return seen.waiting >= count && seen;
			}, `${count} call(s) waiting at gate ${name}`),
		release,
	};
}
