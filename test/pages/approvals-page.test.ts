import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { eventually } from "../support/eventually.ts";
import { PHONE, useBrowser } from "./support/browser.ts";
import { admin, GATEWAY, signInAtProvider } from "./support/gateway.ts";
import { keepScreenshot, readabilityProblems } from "./support/readability.ts";

/**
 * The approvers' page (decision 0121) as npm start sets it up: dave's rule
 * (`demo-operator`, scripts/demo-registry.ts) makes him an approver; a key's
 * call of `add` on `demo` that this file's policy holds waits for him.
 */

const ApprovalsSchema = z.object({ approvals: z.array(z.object({ id: z.string(), arguments: z.string() })) });

/** The `a` of the calls this file's policy holds. */
const HELD_A = 424_242;

/**
 * A call of `add` the policy holds, listed for approvers. The policy reaches the gateway's isolate
 * within its cache's TTL (ENDPOINT_CACHE_TTL_SECONDS, 10 s under npm start): until then a call is
 * answered unheld, and the test calls again, a moment later, with other arguments.
 */
async function heldCall(client: Client) {
	return eventually(
		async () => {
			const args = { a: HELD_A, b: Math.floor(Math.random() * 1_000_000) };
			let answered = false;
			const called = client.callTool({ name: "add", arguments: args }, undefined, { timeout: 120_000 });
			called.then(
				() => {
					answered = true;
				},
				() => {
					answered = true;
				},
			);
			const waiting = await eventually(async () => {
				const listed = ApprovalsSchema.parse(await admin("GET", "/approvals"));
				const found = listed.approvals.find((entry) => entry.arguments === JSON.stringify(args));
				return found ?? (answered ? "answered" : null);
			}, "the call listed for approvers, or answered");
			if (waiting !== "answered") return { args, called, waiting };
			// Not held yet: the isolate still has the policies it read before this test's.
			await new Promise((resolve) => setTimeout(resolve, 500));
			return null;
		},
		"a call held for approvers",
		30_000,
	);
}

describe("the approvals page", () => {
	const tab = useBrowser({ viewport: PHONE });

	it("dave signs in, reads the waiting call on a phone, and approves it with a reason: the caller gets its result", async () => {
		const { page } = tab();
		await admin("PUT", "/policies/pages-approve", {
			expression: `tool.name == "add" && has(arguments.a) && arguments.a == ${HELD_A}`,
			effect: "approve",
			applies: { servers: ["demo"] },
		});
		const created = z.object({ id: z.string(), key: z.string() }).parse(await admin("POST", "/keys", { name: "held" }));
		const client = new Client({ name: "approvals-page-test", version: "1" });
		try {
			await client.connect(
				new StreamableHTTPClientTransport(new URL(`${GATEWAY}/mcp/demo`), {
					requestInit: { headers: { authorization: `Bearer ${created.key}` } },
				}),
			);
			const { args, called, waiting } = await heldCall(client);

			const first = await page.goto(`${GATEWAY}/approvals`);
			expect(first?.status()).toBe(401);
			await page.getByRole("link", { name: "Sign in" }).click();
			await signInAtProvider(page, "dave");
			await page.waitForURL(`${GATEWAY}/approvals`);
			await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Calls waiting for approval");
			const card = page.locator(`[data-approval="${waiting.id}"]`);
			await expect(card.textContent()).resolves.toContain(`Called by ${created.id}`);
			await expect(card.textContent()).resolves.toContain(JSON.stringify(args));
			expect(await readabilityProblems(page)).toEqual([]);
			await keepScreenshot(page, "approvals-phone");

			await card.getByLabel("Reason").fill("checked with the owner");
			await card.getByRole("button", { name: "Approve" }).click();
			await page.waitForURL(`${GATEWAY}/approvals/${waiting.id}`);
			await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Approved");
			const result = await called;
			expect(result.content).toEqual([{ type: "text", text: String(args.a + args.b) }]);
		} finally {
			await client.close();
			await admin("DELETE", "/policies/pages-approve");
			await admin("DELETE", `/keys/${created.id}`);
		}
	});
});
