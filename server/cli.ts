import { parseArgs } from "node:util";
import { PLANS, type PlanName } from "../schema/lib/plans.ts";
import { isScope, SCOPES } from "../schema/lib/scopes.ts";
import { createApiKey, revokeApiKey } from "./auth/api-keys.ts";
import { ConfigError, loadConfig } from "./config.ts";
import { DatabaseLockedError } from "./db/lock.ts";
import { MigrationError } from "./db/migrate.ts";
import { openDatabase, type Database } from "./db/open.ts";
import { createWorkspace, WorkspaceInputError } from "./workspaces.ts";

const USAGE = `Usage: npm run --silent kontor -- <command> [options]

  workspace create --name N --plan free|plus|pro|max --owner-email E [--owner-password P] [--json]
  keys create --workspace ws_… --scopes a.read,b.write|all [--name N] [--json]
  keys revoke key_… [--json]
  migrate [--json]`;

class UsageError extends Error {}

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required.`);
  return value;
}

function parseScopes(text: string): string[] {
  if (text === "all") return [...SCOPES];
  const scopes = [...new Set(text.split(",").map((s) => s.trim()).filter(Boolean))];
  const unknown = scopes.filter((s) => !isScope(s));
  if (scopes.length === 0) throw new UsageError("--scopes needs at least one scope, or all.");
  if (unknown.length > 0) throw new UsageError(`Unknown scope(s): ${unknown.join(", ")}. Known: ${SCOPES.join(", ")}.`);
  return scopes;
}

interface Output {
  json: object;
  text: string;
}

/** A command checks its arguments first, so a typo never opens (or waits on) the database. */
type Command = (args: string[]) => (db: Database) => Promise<Output>;

const commands: Record<string, Command> = {
  "workspace create": (args) => {
    const { values } = parseArgs({
      args,
      options: { name: { type: "string" }, plan: { type: "string" }, "owner-email": { type: "string" }, "owner-password": { type: "string" }, json: { type: "boolean" } },
    });
    const name = required(values, "name");
    const plan = required(values, "plan");
    const ownerEmail = required(values, "owner-email");
    if (!PLANS.includes(plan as PlanName)) throw new UsageError(`--plan must be one of ${PLANS.join(", ")}.`);
    return async (db) => {
      const created = await createWorkspace(db.prisma, { name, plan: plan as PlanName, ownerEmail, ownerPassword: values["owner-password"] });
      const generated = values["owner-password"] ? null : created.owner_password;
      const json = { workspace_id: created.workspace_id, owner_id: created.owner_id, ...(generated && { owner_password: generated }) };
      const text = `workspace ${created.workspace_id} created, owner ${created.owner_id}${generated ? `\nowner password (shown once): ${generated}` : ""}`;
      return { json, text };
    };
  },
  "keys create": (args) => {
    const { values } = parseArgs({
      args,
      options: { workspace: { type: "string" }, scopes: { type: "string" }, name: { type: "string" }, json: { type: "boolean" } },
    });
    const workspaceId = required(values, "workspace");
    const scopes = parseScopes(required(values, "scopes"));
    return async (db) => {
      if (!(await db.prisma.workspace.findUnique({ where: { id: workspaceId }, select: { id: true } }))) {
        throw new UsageError(`No workspace ${workspaceId}.`);
      }
      const key = await createApiKey(db.prisma, { workspaceId, scopes, name: values.name });
      return { json: key, text: `key ${key.id} created (shown once):\n${key.key}\nscopes: ${key.scopes.join(" ")}` };
    };
  },
  "keys revoke": (args) => {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: { json: { type: "boolean" } } });
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError("keys revoke takes exactly one key id (key_…).");
    return async (db) => {
      if (!(await revokeApiKey(db.prisma, id))) throw new UsageError(`No key ${id}.`);
      return { json: { id, revoked: true }, text: `key ${id} revoked` };
    };
  },
  migrate: (args) => {
    parseArgs({ args, options: { json: { type: "boolean" } } });
    return async (db) => ({
      json: { applied: db.migrated },
      text: db.migrated.length ? `applied: ${db.migrated.join(", ")}` : "database is up to date",
    });
  },
};

const isParseArgsError = (error: unknown) =>
  error instanceof TypeError && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS");

export async function runCli(argv: string[]): Promise<number> {
  const json = argv.includes("--json");
  const fail = (message: string, code = 1) => {
    if (json) console.log(JSON.stringify({ error: message }));
    console.error(`kontor: ${message}`);
    return code;
  };
  if (argv.length === 0 || argv[0] === "help" || argv[0] === "--help") {
    console.log(USAGE);
    return argv.length === 0 ? 2 : 0;
  }
  const name = argv[0] === "migrate" ? "migrate" : `${argv[0]} ${argv[1] ?? ""}`;
  const command = commands[name];
  if (!command) {
    const given = argv[0] === "workspace" || argv[0] === "keys" ? argv.slice(0, 2).join(" ") : argv[0];
    return fail(`unknown command '${given}'.\n${USAGE}`, 2);
  }
  let db: Database | undefined;
  try {
    const run = command(argv.slice(name.split(" ").length));
    db = await openDatabase(loadConfig());
    const result = await run(db);
    console.log(json ? JSON.stringify(result.json) : result.text);
    return 0;
  } catch (error) {
    if (error instanceof UsageError || isParseArgsError(error)) return fail(`${(error as Error).message}\n${USAGE}`, 2);
    if (error instanceof ConfigError || error instanceof DatabaseLockedError || error instanceof MigrationError || error instanceof WorkspaceInputError) {
      return fail(error.message);
    }
    return fail(`unexpected error: ${(error as Error).message}`);
  } finally {
    await db?.close();
  }
}

process.exitCode = await runCli(process.argv.slice(2));
