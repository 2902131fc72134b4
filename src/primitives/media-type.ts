/** A Content-Type header's media type, lower-cased, without parameters; "" when there is none. */
export function mediaTypeOf(header: string | null): string {
	return (header ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? "";
}
