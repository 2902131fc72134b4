import type { Context } from "hono";
import { userIdOf } from "../auth/authorization-server.ts";
import { signedInPerson, signInUrl } from "../auth/browser-sign-in.ts";
import { settingsFrom } from "../config.ts";
import {
	type AccessRuleRecord,
	type Identity,
	principalId,
	principalRecord,
	ruleFor,
} from "../registry/access-rules.ts";
import type { ApiKeyRecord } from "../registry/schemas.ts";
import { messagePage, signInFirstPage } from "./connection-pages.ts";
import type { EdgeContext } from "./request-context.ts";

/** A person signed in to the gateway's own pages, with the rule that admits them now and what it grants. */
export interface PersonHere {
	identity: Identity;
	userId: string;
	rule: AccessRuleRecord;
	/** Their principal id under that rule, with no grant: who they are on these pages. */
	principalId: string;
	record: ApiKeyRecord;
	/** Their vault object's name. */
	vault: string;
}

/** A page of the gateway's own that a signed-in person uses (`/connections`, `/approvals`). */
export interface PersonPage {
	/** Its path, where a sign-in comes back to. */
	path: string;
	/** Its name in a title: "connections". */
	name: string;
	/** What it shows, in a sentence's middle: "your connections". */
	shows: string;
	/** Said when the gateway signs nobody in itself, so the page does not exist. */
	noSignIn: string;
}

/**
 * The person the browser signed in as, with the rule that decides for them
 * now (`ruleFor`); a sign-in page when it did not (or the gateway signs
 * nobody in), a refusal when no rule admits them. A form post must come from
 * this origin: the pages' defence against cross-site requests, beside the
 * cookie's SameSite=Lax.
 */
export async function personHere(c: Context<EdgeContext>, here: PersonPage): Promise<PersonHere | Response> {
	const env = c.env;
	const settings = settingsFrom(env);
	if (settings.oauth.mode !== "gateway") return messagePage(404, `No ${here.name} page here`, here.noSignIn, false);
	if (c.req.method === "POST" && c.req.header("origin") !== new URL(c.req.url).origin) {
		return messagePage(403, "Refused", "This form may only be sent from the gateway's own pages.");
	}
	const identity = await signedInPerson(c.req.raw, env);
	if (!identity) return signInFirstPage(signInUrl(here.path), `Sign in to the gateway to see ${here.shows}.`);
	const rules = await c.get("reader").rules();
	const rule = ruleFor(rules, identity, settings.oauth.oidc.issuer);
	const userId = await userIdOf(identity);
	const id = rule ? principalId({ rule: rule.name, generation: rule.generation, userId, grantId: null }) : null;
	const record = rule && id ? principalRecord(id, [rule]) : null;
	if (!rule || !id || !record) {
		return messagePage(
			403,
			"Your account may not use this gateway",
			"Ask the operator of this gateway for access.",
			false,
		);
	}
	return { identity, userId, rule, principalId: id, record, vault: `person:${userId}` };
}
