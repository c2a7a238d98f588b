import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { SCOPES } from "../../schema/lib/scopes.ts";
import { CommandError } from "./errors.ts";

export interface KeyListing {
  object: "api_key";
  id: string;
  name: string | null;
  prefix: string;
  scopes: string[];
  created_at: string;
  /** The newest request log row of the key: request logs are kept 30 days, so null also means "not lately". */
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface WorkspaceListing {
  object: "workspace";
  id: string;
  name: string;
  plan: string;
  created_at: string;
  /** Every key ever created in the workspace, revoked ones included. */
  key_count: number;
  active_key_count: number;
}

const iso = (date: Date | null) => (date ? date.toISOString() : null);

/** Newest first, like the API's lists; never the hash (and the secret is not stored). */
export async function listKeys(prisma: PrismaClient, workspaceId: string): Promise<KeyListing[]> {
  if (!(await prisma.workspace.findUnique({ where: { id: workspaceId }, select: { id: true } }))) {
    throw new CommandError(`No workspace ${workspaceId}.`);
  }
  const rows = await prisma.apiKey.findMany({
    where: { workspaceId },
    orderBy: { id: "desc" },
    select: {
      id: true,
      name: true,
      prefix: true,
      scopes: true,
      createdAt: true,
      lastUsedAt: true,
      revokedAt: true,
    },
  });
  return rows.map((row) => ({
    object: "api_key",
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes,
    created_at: row.createdAt.toISOString(),
    last_used_at: iso(row.lastUsedAt),
    revoked_at: iso(row.revokedAt),
  }));
}

export async function listWorkspaces(prisma: PrismaClient): Promise<WorkspaceListing[]> {
  const [rows, all, active] = await Promise.all([
    prisma.workspace.findMany({
      orderBy: { id: "desc" },
      select: { id: true, name: true, plan: true, createdAt: true },
    }),
    prisma.apiKey.groupBy({ by: ["workspaceId"], _count: { _all: true } }),
    // A rotated key in its grace period still works: it is active until its revoked_at.
    prisma.apiKey.groupBy({
      by: ["workspaceId"],
      where: { OR: [{ revokedAt: null }, { revokedAt: { gt: new Date() } }] },
      _count: { _all: true },
    }),
  ]);
  const counts = (groups: typeof all) => new Map(groups.map((g) => [g.workspaceId, g._count._all]));
  const total = counts(all);
  const live = counts(active);
  return rows.map((row) => ({
    object: "workspace",
    id: row.id,
    name: row.name,
    plan: row.plan,
    created_at: row.createdAt.toISOString(),
    key_count: total.get(row.id) ?? 0,
    active_key_count: live.get(row.id) ?? 0,
  }));
}

/** Columns padded to their widest cell; the last column is not padded. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows]
    .map((cells) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  "))
    .join("\n");
}

const shortTime = (value: string | null) => (value ? value.replace(/\.\d{3}Z$/, "Z") : "-");
const scopeText = (scopes: string[]) =>
  scopes.length === SCOPES.length && SCOPES.every((s) => scopes.includes(s)) ? "all" : scopes.join(",");

export function keysText(workspaceId: string, keys: KeyListing[]): string {
  if (keys.length === 0) return `no keys in workspace ${workspaceId}`;
  return table(
    ["ID", "NAME", "PREFIX", "CREATED", "LAST USED", "REVOKED", "SCOPES"],
    keys.map((k) => [
      k.id,
      k.name ?? "-",
      k.prefix,
      shortTime(k.created_at),
      shortTime(k.last_used_at),
      shortTime(k.revoked_at),
      scopeText(k.scopes),
    ]),
  );
}

export function workspacesText(workspaces: WorkspaceListing[]): string {
  if (workspaces.length === 0) return "no workspaces";
  return table(
    ["ID", "PLAN", "CREATED", "KEYS", "ACTIVE", "NAME"],
    workspaces.map((w) => [
      w.id,
      w.plan,
      shortTime(w.created_at),
      String(w.key_count),
      String(w.active_key_count),
      w.name,
    ]),
  );
}
