/** The upstream layer's deadlines are the neutral helper's (src/primitives/deadline.ts). */
export { type Deadline, startDeadline } from "../primitives/deadline.ts";
