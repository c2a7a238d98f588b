import type { CrmClientFieldsFragment } from "../../generated/graphql.ts";
import { BASE } from "../../router.tsx";

// The clients screens' shared types and texts.

export type Client = CrmClientFieldsFragment;

export const CLIENTS_PATH = `${BASE}/clients`;
export const clientPath = (id: string) => `${CLIENTS_PATH}/${encodeURIComponent(id)}`;

/** Why a role without clients.write sees its buttons greyed out. */
export const ONLY_WRITERS = "Your role can read clients but not create, change or delete them.";

export const ADDRESS_PARTS = ["line1", "line2", "city", "region", "postal_code", "country"] as const;
export type AddressPart = (typeof ADDRESS_PARTS)[number];

/** The address as the lines of an envelope: street, suite, "postal code city", region, country. */
export function addressLines(address: Client["address"]): string[] {
  const place = [address.postal_code, address.city].filter(Boolean).join(" ");
  return [address.line1, address.line2, place, address.region, address.country].filter(
    (line): line is string => Boolean(line),
  );
}
