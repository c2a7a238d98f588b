import { parseArgs } from "node:util";
import type { Revocations } from "../../schema/context.ts";
import type { Prisma, PrismaClient } from "../../schema/generated/prisma/client.ts";
import { CLI_ORIGIN, recordAudit } from "../../schema/lib/audit.ts";
import { PLANS, type PlanName } from "../../schema/lib/plans.ts";
import { isScope, SCOPES } from "../../schema/lib/scopes.ts";
import { createWorkspace } from "../accounts/workspaces.ts";
import { KEY_PUBLISH_LEAD_MS, type SigningKeys } from "../agents/keys.ts";
import { createApiKey, revokeApiKey } from "../auth/api-keys.ts";
import { CommandError, UsageError } from "./errors.ts";
import { keysText, listKeys, listWorkspaces, workspacesText } from "./listings.ts";
import { MAX_REQUEST_BYTES } from "./protocol.ts";

export const USAGE = `Usage: npm run --silent kontor -- <command> [options]

  workspace create --name N --plan free|plus|pro|max --owner-email E [--owner-password P] [--json]
  workspace list [--json]
  keys create --workspace ws_… --scopes a.read,b.write|all [--name N] [--json]
  keys list --workspace ws_… [--json]
  keys revoke key_… [--json]
  signing-keys rotate [--json]
  migrate [--json]

Exit status: 0 done, 1 failed (the reason on stderr), 2 bad arguments.`;

export interface Output {
  json: object;
  text: string;
}

/** What a command may use: the CLI's own database handle, or the running server's. */
export interface CommandContext {
  prisma: PrismaClient;
  /** Applies pending migrations (the CLI's handle) or checks that none are pending (the server's). */
  migrate(): Promise<string[]>;
  /** The keys that sign agents' identity assertions (made on demand: only this command needs the server secret). */
  signingKeys(): SigningKeys;
  /** Tells the deployment's servers that credentials were revoked (through Redis, or the server's own bus). */
  revocations: Revocations;
}

export interface PreparedCommand {
  name: string;
  run(context: CommandContext): Promise<Output>;
}

/** A command checks its arguments first, so a typo never opens (or waits on) the database. */
type Command = (args: string[]) => PreparedCommand["run"];

const WORKSPACE_ID = /^ws_[0-9A-Z]{26}$/;
const KEY_ID = /^key_[0-9A-Z]{26}$/;

function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== "string" || value.trim() === "") throw new UsageError(`--${name} is required.`);
  return value;
}

function workspaceId(values: Record<string, unknown>): string {
  const id = required(values, "workspace");
  if (!WORKSPACE_ID.test(id)) throw new UsageError(`--workspace takes a workspace id (ws_…), not '${id}'.`);
  return id;
}

function parseScopes(text: string): string[] {
  if (text === "all") return [...SCOPES];
  const scopes = [
    ...new Set(
      text
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean),
    ),
  ];
  const unknown = scopes.filter((s) => !isScope(s));
  if (scopes.length === 0) throw new UsageError("--scopes needs at least one scope, or all.");
  if (unknown.length > 0)
    throw new UsageError(`Unknown scope(s): ${unknown.join(", ")}. Known: ${SCOPES.join(", ")}.`);
  return scopes;
}

const json = { type: "boolean" } as const;

const commands: Record<string, Command> = {
  "workspace create": (args) => {
    const { values } = parseArgs({
      args,
      options: {
        name: { type: "string" },
        plan: { type: "string" },
        "owner-email": { type: "string" },
        "owner-password": { type: "string" },
        json,
      },
    });
    const name = required(values, "name");
    const plan = required(values, "plan");
    const ownerEmail = required(values, "owner-email");
    if (!PLANS.includes(plan as PlanName)) throw new UsageError(`--plan must be one of ${PLANS.join(", ")}.`);
    return async ({ prisma }) => {
      const created = await createWorkspace(
        prisma,
        { name, plan: plan as PlanName, ownerEmail, ownerPassword: values["owner-password"] },
        (tx, made) =>
          recordAudit(tx, CLI_ORIGIN, {
            action: "workspace.created",
            targetId: made.workspaceId,
            workspaceId: made.workspaceId,
          }),
      );
      const generated = values["owner-password"] ? null : created.owner_password;
      const json = {
        workspace_id: created.workspace_id,
        owner_id: created.owner_id,
        ...(generated && { owner_password: generated }),
      };
      const text = `workspace ${created.workspace_id} created, owner ${created.owner_id}${generated ? `\nowner password (shown once): ${generated}` : ""}`;
      return { json, text };
    };
  },
  "workspace list": (args) => {
    parseArgs({ args, options: { json } });
    return async ({ prisma }) => {
      const data = await listWorkspaces(prisma);
      return {
        json: { object: "list", data, has_more: false, next_cursor: null },
        text: workspacesText(data),
      };
    };
  },
  "keys create": (args) => {
    const { values } = parseArgs({
      args,
      options: { workspace: { type: "string" }, scopes: { type: "string" }, name: { type: "string" }, json },
    });
    const id = workspaceId(values);
    const scopes = parseScopes(required(values, "scopes"));
    return async ({ prisma }) => {
      if (!(await prisma.workspace.findUnique({ where: { id }, select: { id: true } })))
        throw new CommandError(`No workspace ${id}.`);
      const key = await prisma.$transaction(async (tx) => {
        const made = await createApiKey(tx, { workspaceId: id, scopes, name: values.name });
        await recordAudit(tx, CLI_ORIGIN, { action: "api_key.created", targetId: made.id, workspaceId: id });
        return made;
      });
      return {
        json: key,
        text: `key ${key.id} created (shown once):\n${key.key}\nscopes: ${key.scopes.join(" ")}`,
      };
    };
  },
  "keys list": (args) => {
    const { values } = parseArgs({ args, options: { workspace: { type: "string" }, json } });
    const id = workspaceId(values);
    return async ({ prisma }) => {
      const data = await listKeys(prisma, id);
      return { json: { object: "list", data, has_more: false, next_cursor: null }, text: keysText(id, data) };
    };
  },
  "keys revoke": (args) => {
    const { positionals } = parseArgs({ args, allowPositionals: true, options: { json } });
    const id = positionals[0];
    if (!id || positionals.length > 1) throw new UsageError("keys revoke takes exactly one key id (key_…).");
    if (!KEY_ID.test(id)) throw new UsageError(`keys revoke takes a key id (key_…), not '${id}'.`);
    return async ({ prisma, revocations }) => {
      const audit = (tx: Prisma.TransactionClient, key: { workspaceId: string }) =>
        recordAudit(tx, CLI_ORIGIN, {
          action: "api_key.revoked",
          targetId: id,
          workspaceId: key.workspaceId,
        });
      if (!(await revokeApiKey(prisma, id, audit))) throw new CommandError(`No key ${id}.`);
      await revocations.revoked("api_key", [id]);
      return { json: { id, revoked: true }, text: `key ${id} revoked` };
    };
  },
  "signing-keys rotate": (args) => {
    parseArgs({ args, options: { json } });
    return async ({ signingKeys }) => {
      const kid = await signingKeys().rotate();
      const signsFrom = new Date(Date.now() + KEY_PUBLISH_LEAD_MS).toISOString();
      return {
        json: { kid, signs_from: signsFrom },
        text: `signing key ${kid} published; it signs agents' identity assertions from ${signsFrom}, the previous key until then`,
      };
    };
  },
  migrate: (args) => {
    parseArgs({ args, options: { json } });
    return async ({ migrate }) => {
      const applied = await migrate();
      return {
        json: { applied },
        text: applied.length ? `applied: ${applied.join(", ")}` : "database is up to date",
      };
    };
  },
};

const GROUPS = ["workspace", "keys", "signing-keys"];

/** Finds the command and checks its arguments; throws UsageError. Nothing is opened yet. */
export function prepare(argv: string[]): PreparedCommand {
  // The same bound applies whichever way the command runs, so the output never depends on it.
  if (Buffer.byteLength(JSON.stringify(argv)) > MAX_REQUEST_BYTES - 100) {
    throw new UsageError(`The arguments are too long (more than ${MAX_REQUEST_BYTES / 1024} KiB).`);
  }
  const group = argv[0] ?? "";
  const sub = GROUPS.includes(group) ? (argv[1] ?? "") : undefined;
  if (sub !== undefined && (sub === "" || sub.startsWith("-"))) {
    const known = Object.keys(commands)
      .filter((c) => c.startsWith(`${group} `))
      .map((c) => c.split(" ")[1]);
    throw new UsageError(`${group} needs a sub-command: ${known.join(", ")}.`);
  }
  const name = sub === undefined ? group : `${group} ${sub}`;
  const command = commands[name];
  if (!command) throw new UsageError(`unknown command '${name}'.`);
  return { name, run: command(argv.slice(name.split(" ").length)) };
}
