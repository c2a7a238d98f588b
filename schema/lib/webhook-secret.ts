import { randomBytes } from "node:crypto";

/** `whsec_` + base64 of 32 random bytes (docs/api/webhooks.md), the form Standard Webhooks libraries take. */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}
