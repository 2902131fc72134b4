/** A Content-Type header's media type, lower-cased, without parameters; "" when there is none. */
export function mediaTypeOf(header: string | null): string {
	return (header ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
}

/** Whether an Accept header asks for HTML: a browser's navigation does, an API or MCP client's does not. */
export function acceptsHtml(accept: string | null | undefined): boolean {
	return (accept ?? "").split(",").some((part) => mediaTypeOf(part) === "text/html");
}
