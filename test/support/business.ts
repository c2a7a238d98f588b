import type { Locator } from "playwright-core";
import { GRAPHQL_LIMITS } from "../../server/graphql/limits.ts";
import { sessionGraphql, signInApi, type TestUser } from "./dashboard.ts";
import type { TestServer } from "./server.ts";

/**
 * Helpers of the business screens' tests (test/e2e/dashboard/: leads and clients, invoices,
 * inventory and projects): the API from Node to seed data and check what a screen did, and the
 * money a screen shows.
 */

/** A GraphQL request as one user, in one workspace; throws on any error. */
export type Gql = <T = Record<string, unknown>>(
  query: string,
  variables?: Record<string, unknown>,
) => Promise<T>;

/**
 * `user`'s GraphQL from Node (a session of theirs), in their own workspace or `workspaceId`: for
 * seeding and for reading back what a screen did.
 *
 * @example const gql = await userGraphql(server(), owner); await gql("{ clients { data { id } } }");
 */
export async function userGraphql(
  server: TestServer,
  user: TestUser,
  workspaceId = user.workspaceId,
): Promise<Gql> {
  const session = await signInApi(server, user.email);
  return <T>(query: string, variables: Record<string, unknown> = {}) =>
    sessionGraphql<T>(server, session, query, variables, workspaceId);
}

/**
 * Runs mutation fields (each with its selection) under aliases, as many to a request as `size`
 * (the API takes at most 15 aliases a document; long fields may need fewer, for its token limit),
 * and returns their results in order.
 *
 * @example const [ada] = await inBatches<{ id: string }>(gql, ['createClient(name: "Ada") { id }']);
 */
export async function inBatches<T>(
  gql: Gql,
  fields: readonly string[],
  size: number = GRAPHQL_LIMITS.maxAliases,
): Promise<T[]> {
  const results: T[] = [];
  for (let start = 0; start < fields.length; start += size) {
    const batch = fields.slice(start, start + size);
    const data = await gql<Record<string, T>>(
      `mutation { ${batch.map((field, i) => `m${i}: ${field}`).join("\n")} }`,
    );
    results.push(...batch.map((_, i) => data[`m${i}`]!));
  }
  return results;
}

/**
 * An amount as the dashboard shows it in the tests' browser (en-US): "$1,234.50".
 *
 * @example shownMoney(0.1, "EUR") // "€0.10"
 */
export const shownMoney = (amount: number, currency: string) =>
  new Intl.NumberFormat("en-US", { style: "currency", currency, minimumFractionDigits: 2 }).format(amount);

/** The exact decimal behind the amount shown in `scope` (the `data-amount` of its `Money`): "64.32". */
export const exactAmount = (scope: Locator) => scope.locator("[data-amount]").getAttribute("data-amount");
