import {
	CreateMessageResultSchema,
	ElicitResultSchema,
	ListRootsResultSchema,
} from "@modelcontextprotocol/sdk/types.js";
import type { z } from "zod";
import { ELICITATION_CREATE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE } from "../methods.ts";

/**
 * Which result schema answers which input request (2026-07-28 MRTR: a retry's
 * `inputResponses`, a task's `tasks/update`): an answer is parsed with it
 * before it goes to the peer that asked.
 */
export const INPUT_RESULT_SCHEMAS: Readonly<Record<string, z.ZodType>> = {
	[ELICITATION_CREATE]: ElicitResultSchema,
	[SAMPLING_CREATE_MESSAGE]: CreateMessageResultSchema,
	[ROOTS_LIST]: ListRootsResultSchema,
};
