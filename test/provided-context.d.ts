/** Values globalSetup (Node) hands to the tests (workerd) via provide/inject. */
declare module "vitest" {
	export interface ProvidedContext {
		alphaPort: number;
		betaPort: number;
		gammaPort: number;
		shiftingPort: number;
		mutablePort: number;
		pagedPort: number;
		deltaPort: number;
		epsilonPort: number;
		/** An upstream with an event store: its SSE replies carry ids and resume with Last-Event-ID. */
		resumablePort: number;
		/** An upstream that runs calls as tasks (2025-11-25): `task_gate`, `maybe_task_gate`, `task_fail`, `task_elicit` (scripts/fixtures/task-tools.ts). */
		taskingPort: number;
		/** A 2026-07-28 server (scripts/fixtures/modern-upstream.ts) that refuses 2025-era requests. */
		modernPort: number;
		/** A 2026-07-28 server that also serves 2025-era clients statelessly; its modern replies are SSE. */
		dualPort: number;
		/** A 2026-07-28 server with the tasks extension (SEP-2663): `task_gate`, `maybe_task_gate`, `task_fail`, `task_ask`. */
		modernTaskingPort: number;
		/** The fault-injecting upstream (scripts/fixtures/fault-upstream.ts), a separate process on a fixed port. */
		faultPort: number;
		/** scripts/fixtures/approval-webhook-receiver.ts: checks and records approval notices. */
		approvalReceiverPort: number;
		/** The HTTP supervisor that starts, stops and restarts the fault upstream (scripts/fixtures/fault-supervisor.ts). */
		faultSupervisorPort: number;
		/** The hostile upstream (scripts/fixtures/hostile-upstream.ts): redirects, floods, forged ids, catch-all templates. */
		hostilePort: number;
		/** The test OpenID Connect provider (scripts/fixtures/oidc-idp.ts): `http://127.0.0.1:<port>`. */
		idpIssuer: string;
		/** The JWT issuer (scripts/fixtures/jwt-issuer.ts): keys, RFC 8414 metadata, and /sign, /rotate, /configure for tests. */
		jwtIssuerPort: number;
		/** The OAuth upstream (scripts/fixtures/oauth-upstream.ts): `/mcp` behind its own authorization server, with `/_stats` and `/_control/*`. */
		oauthUpstreamPort: number;
		/** A second OAuth upstream, for test/person-credentials.test.ts alone (it changes lifetimes and gates). */
		peopleUpstreamPort: number;
		/**
		 * The identity upstream (scripts/fixtures/identity-upstream.ts): verifies every request's JWT against a
		 * JWKS a test posts or names, per tenant (`/t/<name>/mcp`); `whoami` answers the verified claims.
		 */
		identityPort: number;
		/**
		 * The OTLP/HTTP receiver (scripts/fixtures/otlp-receiver.ts): `/v1/traces`, `/v1/metrics`, and
		 * `/_control/{spans,metrics,requests,reset,mode}`; test/support/otlp.ts reads it.
		 */
		otlpPort: number;
		/**
		 * Prism (scripts/fixtures/prism-mock.ts) mocking `@readme/oas-examples`' petstore, OpenAPI 3.0 and
		 * 3.1: the documents' operations answered on loopback, their security enforced.
		 */
		petstore30Port: number;
		petstore31Port: number;
		/** Prism mocking train-travel (OpenAPI 3.1, its schemas a web of `$ref`s; OAuth 2 on every operation). */
		trainTravelPort: number;
		/** Prism mocking star-trek (OpenAPI 3.0, 120 operations without operationIds). */
		starTrekPort: number;
		/**
		 * The REST recorder (scripts/fixtures/rest-recorder.ts): records every request exactly (`GET /__log`),
		 * its OpenAPI 3.1 document at `/openapi.json`.
		 */
		restRecorderPort: number;
		/** The guard webhook receiver (scripts/fixtures/guard-webhook.ts): `/`, `/hang`, `/broken`, and `GET /log`. */
		guardWebhookPort: number;
		/**
		 * The MCP Apps extension's example servers (scripts/fixtures/app-servers.ts): two of
		 * `server-basic-vanillajs` (both `get-time` with `ui://get-time/mcp-app.html`) and one
		 * `server-system-monitor` (a View and an app-only tool). MCP at `http://127.0.0.1:<port>/mcp`.
		 */
		appBasicAPort: number;
		appBasicBPort: number;
		appMonitorPort: number;
		viewOnePort: number;
		viewTwoPort: number;
		/** The gateway bundled as a second, separately loaded edge Worker. */
		secondEdgePath: string;
	}
}

export {};
