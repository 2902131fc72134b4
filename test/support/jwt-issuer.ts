import { inject } from "vitest";

let tenants = 0;

/** An issuer with keys, counters and settings of its own: a tenant of the jwt issuer (scripts/fixtures/jwt-issuer.ts). */
export function newIssuer(label: string): string {
	tenants += 1;
	return `http://127.0.0.1:${inject("jwtIssuerPort")}/t/${label}-${tenants}-${Math.random().toString(36).slice(2, 7)}`;
}

/** One request to an issuer's route: GET without a body, POST with one; its JSON answer (none for 204). */
export async function issuerCall<T>(issuer: string, route: string, body?: unknown): Promise<T> {
	const response = await fetch(`${issuer}${route}`, {
		method: body === undefined ? "GET" : "POST",
		...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
	});
	if (!response.ok) throw new Error(`issuer ${route}: ${response.status} ${await response.text()}`);
	return response.status === 204 ? (undefined as T) : ((await response.json()) as T);
}
