import { describe, expect, it, vi } from "vitest";
import { keepForConsent, takeForConsent } from "../src/auth/consent-person.ts";

const SECRET = "consent-person-test-secret-0123456789abcdef";
const ORIGIN = "https://gateway.example";
const PERSON = {
	identity: { issuer: "https://idp.example", subject: "alice", email: "alice@example.com", groups: ["eng"] },
	displayName: "Alice",
};

/** The browser's request after it got `setCookie`: the cookie's name=value sent back. */
function requestWith(setCookie: string): Request {
	return new Request(`${ORIGIN}/authorize`, { method: "POST", headers: { cookie: setCookie.split(";")[0] ?? "" } });
}

describe("who signed in, carried from the sign-in to the consent form", () => {
	it("is read back for the consent handle it was kept for, and the answer clears the cookie", async () => {
		const kept = await keepForConsent(SECRET, ORIGIN, "handle-a", PERSON);
		expect(kept).toMatch(/^gw_consent_[0-9a-f]{16}=.+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=600; Secure$/);
		const { person, clear } = await takeForConsent(requestWith(kept), SECRET, ORIGIN, "handle-a");
		expect(person).toEqual(PERSON);
		expect(clear).toBe(`${kept.split("=")[0]}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0; Secure`);
	});

	it("is nobody for another handle, even with this cookie renamed to that handle's name", async () => {
		const kept = await keepForConsent(SECRET, ORIGIN, "handle-a", PERSON);
		const other = await keepForConsent(SECRET, ORIGIN, "handle-b", PERSON);
		const otherName = other.split("=")[0] ?? "";
		const value = kept.split(";")[0]?.slice(kept.indexOf("=") + 1) ?? "";
		const swapped = new Request(`${ORIGIN}/authorize`, { headers: { cookie: `${otherName}=${value}` } });
		expect((await takeForConsent(swapped, SECRET, ORIGIN, "handle-b")).person).toBeNull();
		expect((await takeForConsent(requestWith(kept), SECRET, ORIGIN, "handle-b")).person).toBeNull();
	});

	it("is nobody when forged, signed with another secret, missing, or older than ten minutes", async () => {
		const kept = await keepForConsent(SECRET, ORIGIN, "handle-a", PERSON);
		const [pair = ""] = kept.split(";");
		const forged = new Request(`${ORIGIN}/authorize`, { headers: { cookie: `${pair.slice(0, -2)}xx` } });
		expect((await takeForConsent(forged, SECRET, ORIGIN, "handle-a")).person).toBeNull();
		const foreign = await keepForConsent(`${SECRET}-other`, ORIGIN, "handle-a", PERSON);
		expect((await takeForConsent(requestWith(foreign), SECRET, ORIGIN, "handle-a")).person).toBeNull();
		expect((await takeForConsent(new Request(`${ORIGIN}/`), SECRET, ORIGIN, "handle-a")).person).toBeNull();
		vi.useFakeTimers({ now: Date.now() + 10 * 60_000 + 1 });
		try {
			expect((await takeForConsent(requestWith(kept), SECRET, ORIGIN, "handle-a")).person).toBeNull();
		} finally {
			vi.useRealTimers();
		}
	});
});
