import { randomBytes } from "node:crypto";
import type { SqlSession } from "./migrate.ts";

/** What a deployment id may be: it goes inside a Redis Cluster hash tag, so never `{` or `}`. */
const DEPLOYMENT_ID = /^[A-Za-z0-9_-]{1,64}$/;

export class DeploymentIdError extends Error {}

/**
 * The deployment's id: the one row of the `deployment` table, made by its migration. Every process
 * that opens this database reads the same id, whatever its DATABASE_URL says. A deleted row is made
 * again (a new id: the way to give a restored database a Redis namespace of its own). Called after
 * the migrations, under their lock, so two processes starting at once agree.
 */
export async function readDeploymentId(session: SqlSession): Promise<string> {
  const read = async () => (await session.query<{ id: string }>("select id from deployment"))[0]?.id;
  let id = await read();
  if (id === undefined) {
    await session.query("insert into deployment (id) values ($1) on conflict (singleton) do nothing", [
      randomBytes(8).toString("hex"),
    ]);
    id = await read();
  }
  if (id === undefined || !DEPLOYMENT_ID.test(id)) {
    throw new DeploymentIdError(
      `The deployment table holds the id ${JSON.stringify(id ?? null)}, which is not 1 to 64 letters, digits, '-' or '_'. It names this deployment's Redis keys: set it back, or delete the row so that the next start makes a new one.`,
    );
  }
  return id;
}
