/** Splits a full name at the first run of whitespace: "Ada King Lovelace" → ["Ada", "King Lovelace"]. */
export function splitFullName(fullName: string): { first: string; last: string | null } {
  const trimmed = fullName.trim();
  const match = /^(\S+)\s+(.+)$/.exec(trimmed);
  if (!match) return { first: trimmed, last: null };
  return { first: match[1]!, last: match[2]! };
}
