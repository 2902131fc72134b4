import { afterEach } from "vitest";
import { eventually } from "./eventually.ts";
import { admin, uniqueName } from "./gateway.ts";

/**
 * What the tests of held calls (`confirm` and `approve` policies) share: tool
 * policies made for one test and deleted after it (policies are global, so
 * each names its test's own server), arguments no other test sends, and the
 * approval an approver is shown for a call.
 */

/** Makes tool policies named `<prefix>-…` for one test file; each test's are deleted after it. */
export function testPolicies(prefix: string): (body: Record<string, unknown>) => Promise<string> {
	const made: string[] = [];
	afterEach(async () => {
		for (const name of made.splice(0)) await admin("DELETE", `/policies/${name}`);
	});
	return async (body) => {
		const name = uniqueName(prefix);
		const response = await admin("PUT", `/policies/${name}`, body);
		if (response.status !== 201) throw new Error(`policy: ${await response.text()}`);
		made.push(name);
		return name;
	};
}

/** Arguments of `add` no other test sends, so this test's call can be found in the shared upstream's log. */
export function uniqueArgs(b = 2): { a: number; b: number } {
	return { a: 1_000_000 + Math.floor(Math.random() * 1_000_000_000), b };
}

/** A call waiting for an approver, as `GET /admin/approvals` lists it. */
export interface ListedApproval {
	id: string;
	policy: string;
	principal: string;
	server: string;
	tool: string;
	arguments: string;
	since: number;
	until: number;
}

/** The approval waiting for the call with these arguments, once the admin's list shows it. */
export function waitingFor(args: Record<string, unknown>): Promise<ListedApproval> {
	return eventually(async () => {
		const listed = (await (await admin("GET", "/approvals")).json()) as { approvals: ListedApproval[] };
		return listed.approvals.find((entry) => entry.arguments === JSON.stringify(args)) ?? null;
	}, "the approval listed");
}
