/**
 * The authorization-server scenarios of the official MCP conformance suite
 * against the gateway's own OAuth authorization server (the OIDC_ISSUER
 * mode): authorization-server-metadata-endpoint (RFC 8414 metadata) and
 * authorization-code-grant (a whole sign-in, then the code exchanged at the
 * token endpoint with PKCE and the resource indicator).
 *
 * Starts the local OpenID Connect provider (scripts/fixtures/oidc-idp.ts) with a
 * client for the gateway, serves the gateway under `wrangler dev` signing
 * people in there, grants alice by an access rule and registers a public
 * client by DCR, whose redirect URI is the suite's callback server. The suite
 * prints an authorization URL and waits for a browser to bring the
 * authorization response to that callback: the scripted browser
 * (scripts/fixtures/browser.ts) is that browser here. It signs alice in at the
 * provider, approves the gateway's consent page that follows (checking it
 * names her), and follows the redirects to the suite's callback.
 *
 * Part of `npm run conformance`, after the server requirement sets, or alone:
 *
 *   node scripts/conformance/authorization.ts [--verbose] [--output-dir <dir>]
 */
import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { gatewayCallbackUrls } from "../../src/auth/provider-callbacks.ts";
import { Browser, type Page } from "../fixtures/browser.ts";
import { DEMO_PASSWORD, startIdp } from "../fixtures/oidc-idp.ts";
import { freePort, HOST, installShutdown, Processes, waitForLine } from "../processes.ts";
import { cliFinished, conformanceVersion, findConformanceBin, startCli } from "./cli.ts";
import {
	admin,
	buildGateway,
	type GatewayBuild,
	type RunningGateway,
	registerPublicClient,
	startGateway,
} from "./gateway.ts";
import {
	type CliRun,
	collectResults,
	printTable,
	reportBrokenRun,
	type ScenarioResult,
	withoutColours,
} from "./results.ts";

/** How the tables and the summary name this part of the run. */
export const AUTHORIZATION_LABEL = "authorization server";

/** The gateway's client at the OpenID Connect provider. */
const GATEWAY_CLIENT_ID = "mcp-edge-gateway";
/** The scenario that waits for a browser to sign in. */
const SIGN_IN_SCENARIO = "authorization-code-grant";
/** The person the browser signs in as; the access rule grants exactly this subject. */
const SIGN_IN_AS = "alice";
/** The suite's callback server answers here, on the port it is given (RFC 8252 loopback redirect). */
const CALLBACK_PATH = "/callback";
/** The URL the suite asks a browser to open: its own line, an authorization request for a code. */
const AUTHORIZATION_URL_LINE = /^https?:\/\/\S+\?\S*\bresponse_type=code\b\S*$/;
/** The suite's callback server says it listens. */
const CALLBACK_LISTENING_LINE = /^Callback server started: /;
/** The suite prints the URL once the metadata scenario is done, a matter of milliseconds. */
const AUTHORIZATION_URL_TIMEOUT_MS = 60_000;
/** After the sign-in only the code exchange is left; this only bounds a hung run. */
const RUN_TIMEOUT_MS = 60_000;
/** How much of a page's text an error message quotes. */
const PAGE_TEXT_CHARS = 300;

export interface AuthorizationRunOptions {
	procs: Processes;
	/** The conformance CLI (findConformanceBin). */
	bin: string;
	/** The built gateway, served by a `wrangler dev` of this run's own. */
	build: GatewayBuild;
	/** A directory of its own, for the gateway's state and secrets. */
	dir: string;
	/** Where the suite leaves each scenario's checks.json. */
	resultsDir: string;
	/** Print the CLI's own output as it runs. */
	verbose: boolean;
}

export interface AuthorizationRun {
	results: ScenarioResult[];
	/** A scenario failed or passed no check, or the run broke (no scenario, an exit status without a failure). */
	failed: boolean;
}

function log(message: string): void {
	console.log(`conformance: ${message}`);
}

function describe(error: unknown): string {
	return error instanceof Error ? error.message : String(error);
}

/**
 * Runs both authorization-server scenarios against the gateway (with the
 * browser playing the person who signs in), prints their table and says
 * whether the run failed. Stops the gateway and the provider it started.
 */
export async function runAuthorizationScenarios(options: AuthorizationRunOptions): Promise<AuthorizationRun> {
	const { procs } = options;
	// The provider names the gateway's callback, so the gateway's port is chosen first.
	const gatewayPort = await freePort();
	const clientSecret = randomBytes(32).toString("base64url");
	const idp = await startIdp({
		clients: [
			{
				client_id: GATEWAY_CLIENT_ID,
				client_secret: clientSecret,
				client_name: "MCP gateway",
				redirect_uris: gatewayCallbackUrls(`http://${HOST}:${gatewayPort}`),
			},
		],
	});
	let gateway: RunningGateway | undefined;
	try {
		gateway = await startGateway(procs, options.build, {
			name: "gateway signing people in (wrangler dev)",
			dir: options.dir,
			port: gatewayPort,
			vars: { OIDC_ISSUER: idp.issuer, OIDC_CLIENT_ID: GATEWAY_CLIENT_ID, OIDC_SCOPES: "openid email profile" },
			secrets: { OIDC_CLIENT_SECRET: clientSecret },
		});
		const callback = new URL(`http://${HOST}:${await freePort()}${CALLBACK_PATH}`);
		const clientId = await prepareSignIn(gateway, callback);
		log(`gateway at ${gateway.url} signs people in at ${idp.issuer}; running the authorization-server scenarios...`);
		const { run, signInFailure } = await runSuite(options, gateway, clientId, callback);
		return report(run, options.resultsDir, gateway.url, signInFailure);
	} finally {
		if (gateway) await procs.stop(gateway.child);
		await idp.close();
	}
}

/** Grants the person the browser signs in as, and registers the suite's client (public, PKCE) by DCR. */
async function prepareSignIn(gateway: RunningGateway, callback: URL): Promise<string> {
	await admin(gateway, "PUT", "/access-rules/conformance", { match: { subject: SIGN_IN_AS } });
	return registerPublicClient(gateway, "MCP conformance suite", callback.href);
}

/**
 * Runs the suite's authorization command and, when it asks for one, the
 * sign-in. A sign-in that fails stops the CLI (it would wait five minutes
 * for the callback) and is said in `signInFailure`.
 */
async function runSuite(
	options: AuthorizationRunOptions,
	gateway: RunningGateway,
	clientId: string,
	callback: URL,
): Promise<{ run: CliRun; signInFailure?: string }> {
	mkdirSync(options.resultsDir, { recursive: true });
	const cli = startCli(
		options.procs,
		options.bin,
		"conformance CLI (authorization server)",
		[
			"authorization",
			...["--url", gateway.url, "--client-id", clientId, "--resource", `${gateway.url}/mcp`],
			...["--port", callback.port, "--output-dir", options.resultsDir],
		],
		options.verbose,
	);
	let signInFailure: string | undefined;
	try {
		const [authorizationUrl] = await waitForLine(cli.child, AUTHORIZATION_URL_LINE, AUTHORIZATION_URL_TIMEOUT_MS);
		// It prints the URL before its callback server listens, and the sign-in's last redirect goes there.
		await waitForLine(cli.child, CALLBACK_LISTENING_LINE, AUTHORIZATION_URL_TIMEOUT_MS);
		await signIn(new URL(authorizationUrl), callback);
	} catch (error) {
		// A CLI that exited without asking for a sign-in says why in its results (e.g. the metadata failed).
		if (cli.child.process.exitCode === null && cli.child.process.signalCode === null) {
			signInFailure = `the scripted sign-in failed: ${describe(error)}`;
			await options.procs.stop(cli.child);
		}
	}
	return { run: await cliFinished(cli, RUN_TIMEOUT_MS, "the authorization-server conformance run"), signInFailure };
}

/**
 * The browser's part: alice's login at the provider, the gateway's consent
 * page after it (approve), and every redirect after that, the last one onto
 * the suite's callback server, which must answer it. Throws, quoting the
 * page, where the flow went elsewhere.
 */
async function signIn(authorizationUrl: URL, callback: URL): Promise<void> {
	const browser = new Browser();
	const login = expectForm(await browser.get(authorizationUrl), "the provider's login page");
	const consent = expectForm(
		await browser.submit(login, { fields: { login: SIGN_IN_AS, password: DEMO_PASSWORD } }),
		"the gateway's consent page",
	);
	if (!consent.html.includes("Signed in as")) {
		throw new Error(`the consent page does not say who signed in: ${pageText(consent)}`);
	}
	const landed = await browser.submit(consent, { fields: {}, button: { name: "decision", value: "approve" } });
	if (landed.url.origin !== callback.origin || landed.url.pathname !== callback.pathname || landed.status !== 200) {
		throw new Error(
			`the sign-in ended at ${landed.url.href} (HTTP ${landed.status}), not at the suite's callback: ${pageText(landed)}`,
		);
	}
}

function expectForm(page: Page, what: string): Page {
	if (page.status === 200 && /<form\b/i.test(page.html)) return page;
	throw new Error(`expected ${what}, got HTTP ${page.status} at ${page.url.href}: ${pageText(page)}`);
}

/** A page's text without its markup, cut short for an error message. */
function pageText(page: Page): string {
	const text = page.html
		.replace(/<(style|script)\b[\s\S]*?<\/\1>/gi, "")
		.replace(/<[^>]*>/g, " ")
		.replace(/\s+/g, " ")
		.trim();
	return text.length > PAGE_TEXT_CHARS ? `${text.slice(0, PAGE_TEXT_CHARS)}...` : text || "(empty)";
}

/** Prints the table and decides: every scenario must pass, with at least one check passed (not all skipped). */
function report(run: CliRun, resultsDir: string, gatewayUrl: string, signInFailure?: string): AuthorizationRun {
	// The scenario stopped mid-sign-in left no checks.json: the failed sign-in is its result.
	const results = collectResults(run, resultsDir).map((result) =>
		signInFailure && result.name === SIGN_IN_SCENARIO ? { ...result, problems: [signInFailure] } : result,
	);
	if (results.length > 0) {
		const title = `authorization-server scenarios, against the gateway's authorization server at ${gatewayUrl}`;
		printTable(results, { title, label: AUTHORIZATION_LABEL }, false);
	}
	const broken = reportBrokenRun(run, results, "the authorization-server run");
	const unproven = results.filter((result) => result.verdict !== "PASS" || result.passed === 0);
	for (const result of unproven.filter((result) => result.verdict === "PASS")) {
		console.error(`conformance: ${result.name} passed no check (all skipped): counted as a failure`);
	}
	return { results, failed: broken || unproven.length > 0 };
}

// ---------------------------------------------------------------------------------------------
// Run directly: builds the gateway itself.

const USAGE = `Usage: node scripts/conformance/authorization.ts [options]

Runs the MCP conformance suite's authorization-server scenarios against the gateway's own OAuth
authorization server, signing in as ${SIGN_IN_AS} at a local OpenID Connect provider with a scripted browser.
npm run conformance runs them too, after the server requirement sets.

  --output-dir <dir>  keep the suite's per-scenario checks.json files there
  --verbose           print the conformance CLI's own output as it runs
  --help              this text`;

function parseArgs(args: string[]): { outputDir?: string; verbose: boolean } {
	const options: { outputDir?: string; verbose: boolean } = { verbose: false };
	for (let i = 0; i < args.length; i++) {
		const arg = args[i];
		if (arg === "--help" || arg === "-h") {
			console.log(USAGE);
			process.exit(0);
		} else if (arg === "--verbose") options.verbose = true;
		else if (arg === "--output-dir" && args[i + 1] !== undefined) options.outputDir = resolve(args[++i] ?? "");
		else {
			console.error(`conformance-authorization: unknown option or missing value: ${arg}\n\n${USAGE}`);
			process.exit(2);
		}
	}
	return options;
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const options = parseArgs(process.argv.slice(2));
	const procs = new Processes();
	const { shutdown, stopping } = installShutdown(procs, "conformance-authorization");
	try {
		const bin = findConformanceBin();
		log(`@modelcontextprotocol/conformance ${conformanceVersion(bin)} (${bin})`);
		const tmp = procs.tempDir("mcp-edge-conformance-authorization-");
		log("building the gateway...");
		const build = await buildGateway(procs, tmp);
		const resultsDir = options.outputDir ?? join(tmp, "results");
		const { failed } = await runAuthorizationScenarios({
			procs,
			bin,
			build,
			dir: join(tmp, "gateway"),
			resultsDir,
			verbose: options.verbose,
		});
		if (options.outputDir) log(`checks.json per scenario in ${options.outputDir}`);
		await shutdown(failed ? 1 : 0);
	} catch (error) {
		// An interrupt stops the children, which makes the step waiting on them fail: not the cause.
		if (stopping()) await new Promise<never>(() => {});
		await shutdown(1, withoutColours(`conformance-authorization: failed: ${describe(error)}`));
	}
}
