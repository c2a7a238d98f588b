import type { GraphQLField } from "graphql";

/**
 * What a credential needs to call a tool, in conjunctive normal form: every group must be
 * satisfied, a group by any one of its scopes. `[]` needs nothing (`workspace`);
 * `[["leads.read"]]` needs leads.read; `{readable: "storage"}` is `[["storage.read", "storage.write"]]`.
 */
export type ScopeRequirement = string[][];

const and = (...rules: ScopeRequirement[]): ScopeRequirement => dedupe(rules.flat());

function or(...rules: ScopeRequirement[]): ScopeRequirement {
  // (a ∧ b) ∨ c = (a ∨ c) ∧ (b ∨ c): distribute the clauses; an empty rule (always true) wins.
  return dedupe(
    rules.reduce<ScopeRequirement>(
      (left, right) => left.flatMap((a) => right.map((b) => [...new Set([...a, ...b])])),
      [[]],
    ),
  );
}

function dedupe(rule: ScopeRequirement): ScopeRequirement {
  const seen = new Map<string, string[]>();
  for (const clause of rule) {
    const sorted = [...new Set(clause)].sort();
    seen.set(sorted.join(" "), sorted);
  }
  return [...seen.values()];
}

/**
 * A scope-auth map as a requirement, or undefined when it cannot be known before running (a
 * function, or a scope kind this builder does not define). Like Pothos, the entries of a map are
 * alternatives; `$all` and `$any` nest.
 */
function requirementOf(scopes: unknown, all = false): ScopeRequirement | undefined {
  if (scopes === undefined || scopes === null) return [];
  if (typeof scopes !== "object" || Array.isArray(scopes)) return undefined;
  const parts: ScopeRequirement[] = [];
  for (const [kind, parameter] of Object.entries(scopes)) {
    let part: ScopeRequirement | undefined;
    if (kind === "scope" && typeof parameter === "string") part = [[parameter]];
    else if (kind === "scope" && Array.isArray(parameter) && parameter.every((s) => typeof s === "string"))
      part = parameter.map((s: string) => [s]);
    else if (kind === "readable" && typeof parameter === "string")
      part = [[`${parameter}.read`, `${parameter}.write`]];
    else if (kind === "$all") part = requirementOf(parameter, true);
    else if (kind === "$any") part = requirementOf(parameter, false);
    if (!part) return undefined;
    parts.push(part);
  }
  if (parts.length === 0) return [];
  return all ? and(...parts) : or(...parts);
}

/**
 * The scope-auth config of a built field as a requirement (Pothos keeps the field's options in its
 * extensions), or undefined when only running it can tell.
 *
 * @example fieldScopes(schema.getQueryType()!.getFields().leads!) // → [["leads.read"]]
 */
export function fieldScopes(field: GraphQLField<unknown, unknown>): ScopeRequirement | undefined {
  const options = (field.extensions as { pothosOptions?: { authScopes?: unknown } } | undefined)
    ?.pothosOptions;
  return requirementOf(options?.authScopes);
}

/**
 * Whether a credential holding `granted` meets `rule`.
 *
 * @example allows([["leads.read"]], new Set(["leads.read"])) // true
 */
export function allows(rule: ScopeRequirement, granted: ReadonlySet<string>): boolean {
  return rule.every((clause) => clause.some((scope) => granted.has(scope)));
}
