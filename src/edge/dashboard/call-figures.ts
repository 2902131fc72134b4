import { z } from "zod";
import { type AdminCaller, AdminRefused, readAdmin } from "./admin-calls.ts";

/** The calls section: figures per server from the gateway's own counter, and where they come from, in a sentence. */
export type CallFigures = ({ rows: z.output<typeof CallCountsSchema>["servers"] } | { unavailable: string }) & {
	source: string;
};

const CallCountsSchema = z.object({
	windowMinutes: z.number(),
	servers: z.array(z.object({ server: z.string(), calls: z.number(), errors: z.number() })),
});

const SOURCE =
	"Counted by the gateway itself (GET /admin/call-counts): each edge isolate sends its counts at most every 10 seconds, so the last seconds may be missing. Errors are every outcome but ok: tool errors, refusals and upstream failures.";

export async function readCallFigures(caller: AdminCaller): Promise<CallFigures> {
	try {
		const counts = await readAdmin(caller, "/call-counts", CallCountsSchema);
		return { rows: counts.servers, source: SOURCE };
	} catch (error) {
		if (!(error instanceof AdminRefused)) throw error;
		return { unavailable: `The figures cannot be read now: ${error.message}`, source: SOURCE };
	}
}
