/**
 * The src/ functions the per-stage microbenchmark measures, bundled from the
 * working tree with esbuild (as wrangler bundles them) and imported as one
 * module. Bundled rather than imported: Node's type stripping does not take
 * all of src/'s syntax (parameter properties). Their types are src/'s own
 * (type-only imports), so a changed signature fails the typecheck here
 * instead of drifting from a copy; a stage's `check` catches a function that
 * no longer behaves as the stage expects.
 */

import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { settingsFrom } from "../../src/config.ts";
import type { mintSessionId, sessionDigest, verifySessionId } from "../../src/edge/2025-11-25/session-id.ts";
import type { bearerToken } from "../../src/edge/bearer.ts";
import type {
	checkHost,
	checkOrigin,
	checkPostHeaders,
	checkProtocolVersion,
	readBodyWithin,
} from "../../src/edge/transport-checks.ts";
import type { compilePolicies, policyVerdict } from "../../src/governance/policies.ts";
import type { parseClientMessage } from "../../src/mcp/client-message.ts";
import type { parseJsonRpcMessage } from "../../src/mcp/jsonrpc.ts";
import type { normalizeOutgoing } from "../../src/mcp/outgoing.ts";
import type { afterLastEvent, EventSizeLimit } from "../../src/mcp/sse.ts";
import type { relaySse } from "../../src/mcp/sse-relay.ts";
import type { sha256Hex } from "../../src/primitives/crypto.ts";
import type { mintApiKey, newKeyId, verifyApiKey } from "../../src/registry/api-key.ts";
import type { withCompletion } from "../../src/session/streams/stream-completion.ts";
import type { startDeadline } from "../../src/upstream/deadline.ts";

export type { Settings as GatewaySettings } from "../../src/config.ts";
export type { PolicyRequest } from "../../src/governance/policies.ts";
export type { SseRelayOptions as RelayOptions } from "../../src/mcp/sse-relay.ts";
export type { PolicyRecord } from "../../src/registry/policy-records.ts";

/** The functions measured, with src/'s signatures. */
export interface Gateway {
	settingsFrom: typeof settingsFrom;
	sha256Hex: typeof sha256Hex;
	bearerToken: typeof bearerToken;
	mintSessionId: typeof mintSessionId;
	verifySessionId: typeof verifySessionId;
	sessionDigest: typeof sessionDigest;
	checkHost: typeof checkHost;
	checkOrigin: typeof checkOrigin;
	checkPostHeaders: typeof checkPostHeaders;
	checkProtocolVersion: typeof checkProtocolVersion;
	readBodyWithin: typeof readBodyWithin;
	parseClientMessage: typeof parseClientMessage;
	parseJsonRpcMessage: typeof parseJsonRpcMessage;
	normalizeOutgoing: typeof normalizeOutgoing;
	relaySse: typeof relaySse;
	afterLastEvent: typeof afterLastEvent;
	EventSizeLimit: typeof EventSizeLimit;
	mintApiKey: typeof mintApiKey;
	newKeyId: typeof newKeyId;
	verifyApiKey: typeof verifyApiKey;
	withCompletion: typeof withCompletion;
	startDeadline: typeof startDeadline;
	compilePolicies: typeof compilePolicies;
	policyVerdict: typeof policyVerdict;
}

/** Where each function measured lives. */
const SOURCES = {
	"src/config.ts": ["settingsFrom"],
	"src/primitives/crypto.ts": ["sha256Hex"],
	"src/edge/bearer.ts": ["bearerToken"],
	"src/edge/2025-11-25/session-id.ts": ["mintSessionId", "verifySessionId", "sessionDigest"],
	"src/governance/policies.ts": ["compilePolicies", "policyVerdict"],
	"src/edge/transport-checks.ts": [
		"checkHost",
		"checkOrigin",
		"checkPostHeaders",
		"checkProtocolVersion",
		"readBodyWithin",
	],
	"src/mcp/client-message.ts": ["parseClientMessage"],
	"src/mcp/jsonrpc.ts": ["parseJsonRpcMessage"],
	"src/mcp/outgoing.ts": ["normalizeOutgoing"],
	"src/mcp/sse-relay.ts": ["relaySse"],
	"src/mcp/sse.ts": ["afterLastEvent", "EventSizeLimit"],
	"src/registry/api-key.ts": ["mintApiKey", "newKeyId", "verifyApiKey"],
	"src/session/streams/stream-completion.ts": ["withCompletion"],
	"src/upstream/deadline.ts": ["startDeadline"],
} as const satisfies Record<string, ReadonlyArray<keyof Gateway>>;

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** Bundles the functions of SOURCES from the working tree (esbuild, in memory) and imports the bundle. */
export async function loadGateway(): Promise<Gateway> {
	const entry = Object.entries(SOURCES)
		.map(([file, names]) => `export { ${names.join(", ")} } from "./${file}";`)
		.join("\n");
	const built = await build({
		stdin: { contents: entry, resolveDir: ROOT, sourcefile: "bench-stages-entry.ts", loader: "ts" },
		bundle: true,
		format: "esm",
		platform: "neutral",
		target: "es2024",
		mainFields: ["module", "main"],
		conditions: ["workerd", "worker", "import"],
		write: false,
		logLevel: "silent",
	});
	const code = built.outputFiles[0]?.text;
	if (code === undefined) throw new Error("bench-stages: esbuild produced no bundle of src/");
	const loaded = (await import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`)) as Record<
		string,
		unknown
	>;
	for (const [file, names] of Object.entries(SOURCES)) {
		for (const name of names) {
			if (typeof loaded[name] !== "function") throw new Error(`bench-stages: ${file} no longer exports ${name}`);
		}
	}
	return loaded as unknown as Gateway;
}
