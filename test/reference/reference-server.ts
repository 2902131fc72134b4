/**
 * The one server definition behind both eras of the conformance reference:
 * every fixture the suite's server scenarios call, registered on a fresh SDK
 * v2 `McpServer`. The 2025 sessions and the 2026-07-28 per-request handler
 * both build their instances here, so the eras cannot drift apart.
 */
import { McpServer, type ProtocolEra, type ServerEventBus } from "@modelcontextprotocol/server";
import { registerContentTools } from "./content-tools.ts";
import type { FlowStateCodec } from "./input-requests.ts";
import { registerInputRequiredTools } from "./input-required-tools.ts";
import { registerPrompts, registerResources } from "./resources-and-prompts.ts";
import { registerSamplingElicitationTools } from "./sampling-elicitation-tools.ts";
import { registerStatelessTools } from "./stateless-tools.ts";

export interface ReferenceServerOptions {
	era: ProtocolEra;
	/** Where list changes are published for open `subscriptions/listen` streams (2026-07-28). */
	bus: ServerEventBus;
	/** Seals and verifies `requestState`; one per process, as every round must verify what another minted. */
	codec: FlowStateCodec;
}

export function createReferenceServer({ era, bus, codec }: ReferenceServerOptions): McpServer {
	const server = new McpServer(
		{ name: "mcp-edge-gateway-conformance-reference", version: "1.0.0" },
		{
			capabilities: {
				tools: { listChanged: true },
				resources: { subscribe: true, listChanged: true },
				prompts: { listChanged: true },
				// Deprecated at 2026-07-28 (SEP-2577), still what the 2025 logging-set-level scenario negotiates.
				logging: {},
				completions: {},
			},
			// Every retried round with a requestState is verified before its handler runs; a forged or
			// expired one is answered -32602 (input-required-result-tampered-state).
			requestState: { verify: codec.verify },
		},
	);
	registerContentTools(server);
	registerSamplingElicitationTools(server);
	registerInputRequiredTools(server, codec);
	registerStatelessTools(server, bus, era);
	registerResources(server);
	registerPrompts(server);
	return server;
}
