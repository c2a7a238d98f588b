import { monotonicFactory } from "ulid";

const ulid = monotonicFactory();

export const ID_PREFIXES = {
  workspace: "ws",
  user: "usr",
  apiKey: "key",
  client: "cli",
  lead: "lead",
  invoice: "inv",
  payment: "pay",
  inventoryItem: "item",
  project: "prj",
  task: "task",
  event: "evt",
  webhookEndpoint: "we",
  webhookDelivery: "whd",
  request: "req",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** Prefixed, time-sortable id: `lead_01J…` (ULID body, so ids sort by creation time). */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${ulid()}`;
}
