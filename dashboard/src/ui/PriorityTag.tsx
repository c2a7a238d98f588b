import type { Priority } from "../generated/graphql.ts";
import { Tag, type Tone } from "./Tag.tsx";

// The API's Priority, which leads and tasks share.

export const PRIORITY_TEXT: Record<Priority, string> = {
  low: "Low",
  medium: "Medium",
  high: "High",
  urgent: "Urgent",
};

export const PRIORITIES = Object.keys(PRIORITY_TEXT) as Priority[];

export const isPriority = (value: string): value is Priority => (PRIORITIES as string[]).includes(value);

const TONE: Record<Priority, Tone | undefined> = {
  low: undefined,
  medium: undefined,
  high: "warn",
  urgent: "bad",
};

/**
 * A priority as a tag; high and urgent stand out. `suffix` follows the word where no column
 * header says what it is.
 *
 * @example <PriorityTag priority="high" suffix="priority" /> // "High priority"
 */
export function PriorityTag({ priority, suffix }: { priority: Priority; suffix?: string }) {
  return (
    <Tag tone={TONE[priority]}>
      {PRIORITY_TEXT[priority]}
      {suffix && ` ${suffix}`}
    </Tag>
  );
}
