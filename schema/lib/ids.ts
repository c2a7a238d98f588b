import { randomBytes } from "node:crypto";
import { monotonicFactory } from "ulid";

/**
 * ulid's default generator asks the OS for randomness once per character (16 calls per id, a few
 * percent of the server's CPU under load); this one draws from a pool of CSPRNG bytes. A byte / 256
 * picks each of the 32 characters with equal probability.
 */
let pool = randomBytes(0);
let next = 0;
function pooledRandom(): number {
  if (next >= pool.length) {
    pool = randomBytes(4096);
    next = 0;
  }
  return pool[next++]! / 256;
}

const ulid = monotonicFactory(pooledRandom);

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
  agentRegistration: "areg",
  agentToken: "atk",
  claimAttempt: "cla",
  trustedProvider: "tpr",
  signingKey: "sk",
  bucket: "bkt",
  storedObject: "obj",
  invitation: "invt",
  auditEvent: "aud",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/** Prefixed, time-sortable id: `lead_01J…` (ULID body, so ids sort by creation time). */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${ulid()}`;
}
