/**
 * `npm run build`'s last step (dist/server/embedded-db.js): makes dist/embedded-db/, the migrated
 * empty embedded database a first start copies (server/db/embedded-template.ts), unless it is current.
 */
import { makeEmbeddedTemplate } from "./embedded-template.ts";

const started = performance.now();
const outcome = await makeEmbeddedTemplate(async (dir) => {
  const [{ PGlite }, { pg_trgm }] = await Promise.all([
    import("@electric-sql/pglite"),
    import("@electric-sql/pglite/contrib/pg_trgm"),
  ]);
  return PGlite.create(dir, { extensions: { pg_trgm } });
});
if (outcome === "made")
  console.log(`server: made the embedded database template in ${Math.round(performance.now() - started)} ms`);
