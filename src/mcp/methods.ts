/*
 * Every MCP method name the gateway uses, each spelled once (both eras, both
 * directions). Each is a `const`, so its type is its literal: a `switch` on a
 * message's method narrows by these, and a name mistyped anywhere else fails
 * to compile instead of failing to match. No method name is written as a
 * string anywhere else in src/ (test/method-names.test.ts holds it so).
 */

// Client → server requests, both eras.
export const INITIALIZE = "initialize" as const;
export const PING = "ping" as const;
export const TOOLS_LIST = "tools/list" as const;
export const TOOLS_CALL = "tools/call" as const;
export const PROMPTS_LIST = "prompts/list" as const;
export const PROMPTS_GET = "prompts/get" as const;
export const RESOURCES_LIST = "resources/list" as const;
export const RESOURCES_TEMPLATES_LIST = "resources/templates/list" as const;
export const RESOURCES_READ = "resources/read" as const;
export const RESOURCES_SUBSCRIBE = "resources/subscribe" as const;
export const RESOURCES_UNSUBSCRIBE = "resources/unsubscribe" as const;
export const COMPLETION_COMPLETE = "completion/complete" as const;
export const LOGGING_SET_LEVEL = "logging/setLevel" as const;

// Client → server requests of the tasks utility (2025-11-25) and the tasks extension (2026-07-28).
export const TASKS_GET = "tasks/get" as const;
export const TASKS_RESULT = "tasks/result" as const;
export const TASKS_LIST = "tasks/list" as const;
export const TASKS_CANCEL = "tasks/cancel" as const;
export const TASKS_UPDATE = "tasks/update" as const;

// Client → server requests only 2026-07-28 has.
export const SERVER_DISCOVER = "server/discover" as const;
export const SUBSCRIPTIONS_LISTEN = "subscriptions/listen" as const;

// Client → server notifications.
export const NOTIFICATIONS_INITIALIZED = "notifications/initialized" as const;
export const NOTIFICATIONS_CANCELLED = "notifications/cancelled" as const;
export const NOTIFICATIONS_PROGRESS = "notifications/progress" as const;
export const NOTIFICATIONS_ROOTS_LIST_CHANGED = "notifications/roots/list_changed" as const;

// Server → client requests.
export const ELICITATION_CREATE = "elicitation/create" as const;
export const SAMPLING_CREATE_MESSAGE = "sampling/createMessage" as const;
export const ROOTS_LIST = "roots/list" as const;

// Server → client notifications.
export const NOTIFICATIONS_MESSAGE = "notifications/message" as const;
export const NOTIFICATIONS_TOOLS_LIST_CHANGED = "notifications/tools/list_changed" as const;
export const NOTIFICATIONS_PROMPTS_LIST_CHANGED = "notifications/prompts/list_changed" as const;
export const NOTIFICATIONS_RESOURCES_LIST_CHANGED = "notifications/resources/list_changed" as const;
export const NOTIFICATIONS_RESOURCES_UPDATED = "notifications/resources/updated" as const;
export const NOTIFICATIONS_TASKS_STATUS = "notifications/tasks/status" as const;
export const NOTIFICATIONS_ELICITATION_COMPLETE = "notifications/elicitation/complete" as const;
export const NOTIFICATIONS_SUBSCRIPTIONS_ACKNOWLEDGED = "notifications/subscriptions/acknowledged" as const;
