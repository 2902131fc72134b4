import type { TestProject } from "vitest/node";
import { startAppServer } from "../scripts/fixtures/app-servers.ts";
import { startApprovalWebhookReceiver } from "../scripts/fixtures/approval-webhook-receiver.ts";
import { startFaultSupervisor } from "../scripts/fixtures/fault-supervisor.ts";
import {
	APPROVAL_WEBHOOK_SECRET,
	IDP_GATEWAY_CLIENT,
	IDP_RESOURCE,
	IDP_TEST_CLIENT,
	OAUTH_UPSTREAM_STATIC_CLIENT,
	RESUME_RETRY_MS,
} from "../scripts/fixtures/fixture-names.ts";
import { startGuardWebhook } from "../scripts/fixtures/guard-webhook.ts";
import { startHostileUpstream } from "../scripts/fixtures/hostile-upstream.ts";
import { startIdentityUpstream } from "../scripts/fixtures/identity-upstream.ts";
import { startJwtIssuer } from "../scripts/fixtures/jwt-issuer.ts";
import { startModernUpstream } from "../scripts/fixtures/modern-upstream.ts";
import { startOAuthUpstream } from "../scripts/fixtures/oauth-upstream.ts";
import { startIdp } from "../scripts/fixtures/oidc-idp.ts";
import { startOtlpReceiver } from "../scripts/fixtures/otlp-receiver.ts";
import { startPrismMock } from "../scripts/fixtures/prism-mock.ts";
import { startRestRecorder } from "../scripts/fixtures/rest-recorder.ts";
import { startUpstream } from "../scripts/fixtures/upstream-server.ts";
import { buildSecondEdge } from "./build-edge.ts";

/** Upstream MCP servers on loopback for the tests in workerd; their ports reach tests via inject(). */
export default async function setup(project: TestProject) {
	// Mock REST APIs of real OpenAPI documents (Prism takes a moment to start: it starts first, awaited last).
	const examples = `${project.config.root}/node_modules/@readme/oas-examples`;
	const prisms = Promise.all([
		startPrismMock(`${examples}/3.0/json/petstore.json`),
		startPrismMock(`${examples}/3.1/json/petstore.json`),
		startPrismMock(`${examples}/3.1/json/train-travel.json`),
		startPrismMock(`${examples}/3.0/json/star-trek.json`),
	]);
	project.provide("secondEdgePath", await buildSecondEdge(project.config.root, project.name));
	const alpha = await startUpstream({ name: "alpha", requireToken: "alpha-secret", gates: true });
	const beta = await startUpstream({ name: "beta", enableJsonResponse: true, gates: true });
	const gamma = await startUpstream({ name: "gamma", catalog: "long-names", gates: true });
	const shifting = await startUpstream({ name: "shifting", catalog: "shifting" });
	const mutable = await startUpstream({ name: "mutable", catalog: "mutable" });
	const paged = await startUpstream({ name: "paged", catalog: "paged" });
	// Full peers of their client: they ask it for sampling, elicitation and roots, and log outside requests.
	const delta = await startUpstream({ name: "delta", gates: true, peer: true });
	const epsilon = await startUpstream({ name: "epsilon", gates: true, peer: true });
	project.provide("deltaPort", delta.port);
	project.provide("epsilonPort", epsilon.port);
	// Replies carry event ids and can be resumed with Last-Event-ID (2025-11-25 transport).
	const resumable = await startUpstream({ name: "resumable", gates: true, resumable: { retryMs: RESUME_RETRY_MS } });
	project.provide("mutablePort", mutable.port);
	project.provide("pagedPort", paged.port);
	project.provide("alphaPort", alpha.port);
	project.provide("betaPort", beta.port);
	project.provide("gammaPort", gamma.port);
	project.provide("shiftingPort", shifting.port);
	project.provide("resumablePort", resumable.port);
	// Runs calls as tasks (2025-11-25, SDK experimental tasks): task_gate (required), maybe_task_gate (optional), task_fail, task_elicit.
	const tasking = await startUpstream({ name: "tasking", gates: true, tasks: true });
	project.provide("taskingPort", tasking.port);
	// 2026-07-28 servers (SDK v2): one that speaks only the modern era, one that speaks both (its modern replies in SSE).
	const modern = await startModernUpstream({ name: "modern", legacy: "reject" });
	const dual = await startModernUpstream({ name: "dual", legacy: "stateless", responseMode: "sse" });
	project.provide("modernPort", modern.port);
	project.provide("dualPort", dual.port);
	// A 2026-07-28 server with the tasks extension (SEP-2663): task_gate, maybe_task_gate, task_fail, task_ask.
	const modernTasking = await startModernUpstream({ name: "modern-tasking", legacy: "reject", tasks: true });
	project.provide("modernTaskingPort", modernTasking.port);
	// A misbehaving upstream (redirects, floods, lies about ids) for the security tests.
	const hostile = await startHostileUpstream();
	project.provide("hostilePort", hostile.port);
	// The OpenID Connect provider sign-in is federated to; it also issues JWT access tokens for IDP_RESOURCE.
	const idp = await startIdp({ clients: [IDP_GATEWAY_CLIENT, IDP_TEST_CLIENT], resource: { uri: IDP_RESOURCE } });
	project.provide("idpIssuer", idp.issuer);
	// An OAuth issuer of JWT access tokens (its keys, metadata and a signing endpoint) for the external-issuer tests.
	const jwtIssuer = await startJwtIssuer();
	project.provide("jwtIssuerPort", jwtIssuer.port);
	// An upstream that authorizes each person with OAuth 2.1, with its own authorization server.
	const oauthUpstream = await startOAuthUpstream({ staticClients: [OAUTH_UPSTREAM_STATIC_CLIENT] });
	project.provide("oauthUpstreamPort", oauthUpstream.port);
	// Another, for the end-to-end tests of people's connections: they switch its token lifetimes and gates.
	const peopleUpstream = await startOAuthUpstream({ staticClients: [OAUTH_UPSTREAM_STATIC_CLIENT] });
	project.provide("peopleUpstreamPort", peopleUpstream.port);
	// An upstream that serves only requests whose JWT verifies: the gateway's assertions, or exchanged tokens.
	const identity = await startIdentityUpstream();
	project.provide("identityPort", identity.port);
	// The OTLP/HTTP receiver telemetry tests export to (no other test points the gateway at it).
	const otlp = await startOtlpReceiver();
	project.provide("otlpPort", otlp.port);
	// A REST API with an OpenAPI document that records every request exactly, for servers made from documents.
	const restRecorder = await startRestRecorder();
	project.provide("restRecorderPort", restRecorder.port);
	// Receives approval notices in its own process and checks their signatures (test/approvers.test.ts).
	const approvalReceiver = await startApprovalWebhookReceiver(APPROVAL_WEBHOOK_SECRET);
	project.provide("approvalReceiverPort", approvalReceiver.port);
	// An organisation's own content scanner for webhook guards: checks signatures, records, answers by rule.
	const guardWebhook = await startGuardWebhook();
	project.provide("guardWebhookPort", guardWebhook.port);
	const fault = await startFaultSupervisor(project.config.root);
	project.provide("faultPort", fault.faultPort);
	project.provide("faultSupervisorPort", fault.supervisorPort);
	// The MCP Apps extension's example servers: two of one kind (their ui:// URIs collide), and one with an app-only tool.
	const [appBasicA, appBasicB, appMonitor] = await Promise.all([
		startAppServer("basic"),
		startAppServer("basic"),
		startAppServer("monitor"),
	]);
	project.provide("appBasicAPort", appBasicA.port);
	project.provide("appBasicBPort", appBasicB.port);
	project.provide("appMonitorPort", appMonitor.port);
	// The repo's own upstreams with an MCP App each (one ui:// URI, CSP and permissions, an app-only tool), told apart by name.
	const viewOne = await startUpstream({ name: "view-one", apps: true, peer: true });
	const viewTwo = await startUpstream({ name: "view-two", apps: true, peer: true });
	project.provide("viewOnePort", viewOne.port);
	project.provide("viewTwoPort", viewTwo.port);
	const [petstore30, petstore31, trainTravel, starTrek] = await prisms;
	project.provide("petstore30Port", petstore30.port);
	project.provide("petstore31Port", petstore31.port);
	project.provide("trainTravelPort", trainTravel.port);
	project.provide("starTrekPort", starTrek.port);
	return async () => {
		await Promise.all([
			alpha.close(),
			beta.close(),
			gamma.close(),
			shifting.close(),
			mutable.close(),
			paged.close(),
			delta.close(),
			epsilon.close(),
			resumable.close(),
			tasking.close(),
			modern.close(),
			dual.close(),
			modernTasking.close(),
			hostile.close(),
			idp.close(),
			jwtIssuer.close(),
			oauthUpstream.close(),
			peopleUpstream.close(),
			identity.close(),
			otlp.close(),
			restRecorder.close(),
			guardWebhook.close(),
			fault.stop(),
			approvalReceiver.close(),
			petstore30.close(),
			petstore31.close(),
			trainTravel.close(),
			starTrek.close(),
			appBasicA.close(),
			appBasicB.close(),
			appMonitor.close(),
			viewOne.close(),
			viewTwo.close(),
		]);
	};
}
