/**
 * The reference server's `test://` resources (static text and binary, a
 * template, one to subscribe to) and `test_*` prompts, as the resources-* and
 * prompts-* scenarios read them. An unknown resource is the SDK's -32602
 * (SEP-2164), and 2026-07-28 list and read results carry the SDK's default
 * caching hints (SEP-2549), unless a hint is configured here.
 */
import { completable, type McpServer, ResourceTemplate } from "@modelcontextprotocol/server";
import * as z from "zod";
import { PNG_BASE64 } from "./fixture-content.ts";

/** Candidates the prompt-argument completion filters by what was typed (completion-complete). */
const COMPLETIONS = ["paris", "park", "party", "test", "testing"];

/** Static resources may be cached by anyone for a minute: their content never changes. */
const STATIC_CACHE = { ttlMs: 60_000, cacheScope: "public" } as const;

export function registerResources(server: McpServer): void {
	server.registerResource(
		"static-text",
		"test://static-text",
		{ description: "A static text.", mimeType: "text/plain", cacheHint: STATIC_CACHE },
		(uri) => ({
			contents: [{ uri: uri.href, mimeType: "text/plain", text: "This is the content of the static text resource." }],
		}),
	);
	server.registerResource(
		"static-binary",
		"test://static-binary",
		{ description: "A static PNG.", mimeType: "image/png", cacheHint: STATIC_CACHE },
		(uri) => ({ contents: [{ uri: uri.href, mimeType: "image/png", blob: PNG_BASE64 }] }),
	);
	server.registerResource(
		"watched-resource",
		"test://watched-resource",
		{ description: "A resource one may subscribe to.", mimeType: "text/plain" },
		(uri) => ({ contents: [{ uri: uri.href, mimeType: "text/plain", text: "Watched resource content" }] }),
	);
	server.registerResource(
		"template",
		new ResourceTemplate("test://template/{id}/data", { list: undefined }),
		{ description: "Data for an id.", mimeType: "application/json" },
		(uri, variables) => {
			const id = String(variables.id);
			const data = { id, templateTest: true, data: `Data for ID: ${id}` };
			return { contents: [{ uri: uri.href, mimeType: "application/json", text: JSON.stringify(data) }] };
		},
	);

	// 2025 subscriptions are accepted; no resource here ever changes, so no update ever follows one.
	server.server.setRequestHandler("resources/subscribe", () => ({}));
	server.server.setRequestHandler("resources/unsubscribe", () => ({}));
}

export function registerPrompts(server: McpServer): void {
	const complete = (value: string) => COMPLETIONS.filter((candidate) => candidate.startsWith(value));

	server.registerPrompt("test_simple_prompt", { description: "A prompt without arguments." }, () => ({
		messages: [{ role: "user", content: { type: "text", text: "This is a simple prompt for testing." } }],
	}));
	server.registerPrompt(
		"test_prompt_with_arguments",
		{
			description: "A prompt with two arguments.",
			argsSchema: z.object({
				arg1: completable(z.string().describe("First argument."), complete),
				arg2: completable(z.string().describe("Second argument."), complete),
			}),
		},
		(args) => ({
			messages: [
				{
					role: "user",
					content: { type: "text", text: `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'` },
				},
			],
		}),
	);
	server.registerPrompt(
		"test_prompt_with_embedded_resource",
		{
			description: "A prompt embedding a resource.",
			argsSchema: z.object({ resourceUri: z.string().describe("URI of the resource to embed.") }),
		},
		(args) => ({
			messages: [
				{
					role: "user",
					content: {
						type: "resource",
						resource: { uri: args.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." },
					},
				},
				{ role: "user", content: { type: "text", text: "Please process the embedded resource above." } },
			],
		}),
	);
	server.registerPrompt("test_prompt_with_image", { description: "A prompt with an image." }, () => ({
		messages: [
			{ role: "user", content: { type: "image", data: PNG_BASE64, mimeType: "image/png" } },
			{ role: "user", content: { type: "text", text: "Please analyze the image above." } },
		],
	}));
}
