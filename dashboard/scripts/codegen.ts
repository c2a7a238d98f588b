// Regenerates dashboard/src/generated/graphql.ts from the committed SDL and the dashboard's
// operations (`npm run generate:dashboard`; `npm run generate` does it too, with the SDK's files).

import { fileURLToPath } from "node:url";
import { generate } from "@graphql-codegen/cli";
import { dashboardCodegen } from "../../codegen.ts";

await generate(dashboardCodegen(fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "")), true);
