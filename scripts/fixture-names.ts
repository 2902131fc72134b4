/** Names and values shared by the fixture upstream (Node) and the tests (workerd); nothing here may import Node APIs. */

/** A tool name of 70 characters, longer than many model APIs accept once namespaced. */
export const LONG_TOOL_NAME = "summarize_the_quarterly_financial_report_for_the_given_business_unit_xy";

/**
 * The `retry` (ms) of the resumable test upstream's priming events: how long a
 * client waits before it resumes a reply the upstream closed. Short, to keep tests fast.
 */
export const RESUME_RETRY_MS = 20;
