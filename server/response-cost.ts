/**
 * The GraphQL cost estimate lives beside the schema, which also uses it at run time to cut pages
 * (schema/lib/list-page.ts); scripts that price documents keep importing it from here.
 */
export { estimate, pageSize, type Estimate, type FragmentLookup } from "../schema/lib/response-cost.ts";
