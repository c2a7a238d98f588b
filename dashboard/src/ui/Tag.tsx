import type { HTMLAttributes, ReactNode } from "react";
import "./tag.css";

/** A tag's colour: ok (green), warn (yellow), bad (red), info (blue); none is grey. */
export type Tone = "ok" | "warn" | "bad" | "info";

/**
 * A short status as a pill (a stage, a stock status, a priority).
 *
 * @example <Tag tone="bad">Overdue</Tag>
 */
export function Tag({
  tone,
  children,
  ...span
}: { tone?: Tone | undefined } & Omit<HTMLAttributes<HTMLSpanElement>, "className">) {
  return (
    <span className={tone ? `tag tag-${tone}` : "tag"} {...span}>
      {children}
    </span>
  );
}

/**
 * Tags side by side, wrapping as room allows ("Sent" and "Overdue").
 *
 * @example <Tags><Tag>Sent</Tag><Tag tone="bad">Overdue</Tag></Tags>
 */
export function Tags({ children }: { children: ReactNode }) {
  return <span className="tags">{children}</span>;
}
