/** Keeps background work alive after the response (the request's `waitUntil`). */
export type WaitUntil = (promise: Promise<unknown>) => void;
