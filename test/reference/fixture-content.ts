/**
 * Payloads the conformance scenarios expect verbatim or check the shape of:
 * the texts, media and schemas behind the `test_*` tools, prompts and
 * `test://` resources of the reference server.
 */
import type { CallToolResult, ElicitRequestFormParams } from "@modelcontextprotocol/server";

/** The restricted JSON Schema an elicitation form may use. */
export type FormSchema = ElicitRequestFormParams["requestedSchema"];

/** A 1x1 red PNG and a minimal WAV: the smallest valid image and audio payloads. */
export const PNG_BASE64 =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
export const WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/** JSON Schema 2020-12 keywords that must survive tools/list unchanged (SEP-1613, SEP-2106). */
export const JSON_SCHEMA_2020_12 = {
	$schema: "https://json-schema.org/draft/2020-12/schema",
	type: "object",
	$defs: {
		address: {
			$anchor: "addressDef",
			type: "object",
			properties: { street: { type: "string" }, city: { type: "string" } },
		},
	},
	properties: {
		name: { type: "string" },
		address: { $ref: "#/$defs/address" },
		contactMethod: { type: "string", enum: ["phone", "email"] },
		phone: { type: "string" },
		email: { type: "string" },
	},
	allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
	if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
	// biome-ignore lint/suspicious/noThenProperty: JSON Schema's "then" keyword; this object is never awaited.
	then: { required: ["phone"] },
	else: { required: ["email"] },
	additionalProperties: false,
} as const;

/** SEP-1034: a form whose fields of every primitive type carry a default. */
export const DEFAULTS_FORM: FormSchema = {
	type: "object",
	properties: {
		name: { type: "string", description: "User name", default: "John Doe" },
		age: { type: "integer", description: "User age", default: 30 },
		score: { type: "number", description: "User score", default: 95.5 },
		status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
		verified: { type: "boolean", description: "Verification status", default: true },
	},
	required: [],
};

/** SEP-1330: one field of each enum variant (untitled, titled, legacy enumNames, and both multi-selects). */
export const ENUMS_FORM: FormSchema = {
	type: "object",
	properties: {
		untitledSingle: { type: "string", description: "Choose an option", enum: ["option1", "option2", "option3"] },
		titledSingle: {
			type: "string",
			description: "Choose a titled option",
			oneOf: [
				{ const: "value1", title: "First Option" },
				{ const: "value2", title: "Second Option" },
				{ const: "value3", title: "Third Option" },
			],
		},
		legacyEnum: {
			type: "string",
			description: "Choose a legacy option",
			enum: ["opt1", "opt2", "opt3"],
			enumNames: ["Option One", "Option Two", "Option Three"],
		},
		untitledMulti: {
			type: "array",
			description: "Choose multiple options",
			items: { type: "string", enum: ["option1", "option2", "option3"] },
		},
		titledMulti: {
			type: "array",
			description: "Choose multiple titled options",
			items: {
				anyOf: [
					{ const: "value1", title: "First Choice" },
					{ const: "value2", title: "Second Choice" },
					{ const: "value3", title: "Third Choice" },
				],
			},
		},
	},
	required: [],
};

/** A one-field form asking for a string, the shape most input-required scenarios elicit. */
export function stringForm(field: string): FormSchema {
	return { type: "object", properties: { [field]: { type: "string" } }, required: [field] };
}

export function text(value: string): CallToolResult {
	return { content: [{ type: "text", text: value }] };
}

export function delay(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}
