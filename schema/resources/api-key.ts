import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import type { Tx } from "../events.ts";
import type { ApiKey as ApiKeyRow } from "../generated/prisma/client.ts";
import { displayPrefix, generateApiKey, hashApiKey, MAX_LIVE_API_KEYS } from "../lib/api-key-secret.ts";
import { recordAudit } from "../lib/audit.ts";
import { invalidState, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { listPage } from "../lib/list-page.ts";
import { found } from "../lib/records.ts";
import { isScope, SCOPES } from "../lib/scopes.ts";
import { requiredText } from "../lib/validate.ts";
import { listType, objectKind, pageArgs } from "./shared.ts";

/** The longest a rotated key may keep working beside its successor: 7 days. */
export const MAX_GRACE_SECONDS = 7 * 24 * 3600;

const OWNER_ONLY =
  "For the dashboard: no scope is needed, but only an owner signed in to it may do this (a member gets 403 owner_required; an API key or agent token 403 session_required).";

export const ApiKey = builder.prismaObject("ApiKey", {
  description:
    "An API key of the workspace. Its secret is shown once, when it is made; Kontor keeps only its hash.",
  fields: (t) => ({
    object: objectKind(t, "api_key"),
    id: t.exposeID("id", { description: "`key_…`: also the key_id of its requests in the request logs." }),
    name: t.exposeString("name", {
      nullable: true,
      description: "What the key is for; null for keys made without a name (CLI).",
    }),
    prefix: t.exposeString("prefix", {
      description: "The key's first characters (`ktr_live_AbCd`), to recognise it.",
    }),
    scopes: t.exposeStringList("scopes", { description: "What the key may do." }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When it was made." }),
    last_used_at: t.expose("lastUsedAt", {
      type: "DateTime",
      nullable: true,
      description: "When it last made a request (recorded at most once a minute); null if never.",
    }),
    revoked_at: t.expose("revokedAt", {
      type: "DateTime",
      nullable: true,
      description:
        "When it stopped, or will stop, working: in the future while a rotated key's grace period runs; null while it is not revoked.",
    }),
  }),
});

const ApiKeyList = listType("ApiKey", ApiKey);

interface CreatedShape {
  api_key: ApiKeyRow;
  secret: string;
}

const CreatedApiKey = builder.objectRef<CreatedShape>("CreatedApiKey").implement({
  description: "A new API key and its secret: shown this once, never again.",
  fields: (t) => ({
    api_key: t.expose("api_key", { type: ApiKey, description: "The key." }),
    secret: t.exposeString("secret", {
      description: "The full key (`ktr_live_…`) to send as `Authorization: Bearer …`. Shown once: keep it.",
    }),
  }),
});

const RotatedApiKey = builder.objectRef<CreatedShape & { previous: ApiKeyRow }>("RotatedApiKey").implement({
  description:
    "The key that replaces a rotated one, its secret (shown this once), and the old key with the time it stops working.",
  fields: (t) => ({
    api_key: t.expose("api_key", {
      type: ApiKey,
      description: "The new key, with the old one's name and scopes.",
    }),
    secret: t.exposeString("secret", {
      description: "The new key's full secret (`ktr_live_…`). Shown once: keep it.",
    }),
    previous: t.expose("previous", {
      type: ApiKey,
      description:
        "The old key: its revoked_at is when it stops working (now, or when the grace period ends).",
    }),
  }),
});

const CreateApiKeyInput = builder.inputType("CreateApiKeyInput", {
  description: "A new key's name and scopes.",
  fields: (t) => ({
    name: t.string({ required: true, description: "What the key is for (1–200 characters)." }),
    scopes: t.stringList({
      required: true,
      description: `What it may do: one or more of ${SCOPES.join(", ")}.`,
    }),
  }),
});

/** Not revoked, or rotated and still in its grace period. */
const live = (now: Date) => ({ OR: [{ revokedAt: null }, { revokedAt: { gt: now } }] });

function checkedScopes(scopes: readonly string[]): string[] {
  if (scopes.length === 0) throw validationFailed("input.scopes", "Choose at least one scope.");
  scopes.forEach((scope, index) => {
    if (!isScope(scope))
      throw validationFailed(
        `input.scopes[${index}]`,
        `input.scopes[${index}] is not a scope: use ${SCOPES.join(", ")}.`,
      );
  });
  return [...new Set(scopes)];
}

async function newKey(tx: Tx, ctx: Context, name: string | null, scopes: string[]): Promise<CreatedShape> {
  const secret = generateApiKey();
  const api_key = await tx.apiKey.create({
    data: {
      id: newId("apiKey"),
      workspaceId: ctx.credential.workspaceId,
      name,
      prefix: displayPrefix(secret),
      hash: hashApiKey(secret),
      scopes,
    },
  });
  return { api_key, secret };
}

/** Serializes key changes per workspace (so two creations at once cannot both pass the cap), then counts live keys. */
/**
 * Locks the workspace's row, so that the key changes of one workspace run one at a time, and answers
 * the time read once the lock is held: a change that waited for it sees the one before as past (a key
 * rotated or revoked a moment ago is revoked, not "still in its grace period").
 */
async function lockKeyChanges(tx: Tx, workspaceId: string): Promise<Date> {
  await tx.$queryRaw`select id from workspaces where id = ${workspaceId} for update`;
  return new Date();
}

/** Locks the key changes (lockKeyChanges), then counts the workspace's live keys. */
async function liveKeys(tx: Tx, workspaceId: string): Promise<{ count: number; now: Date }> {
  const now = await lockKeyChanges(tx, workspaceId);
  return { count: await tx.apiKey.count({ where: { workspaceId, ...live(now) } }), now };
}

const tooMany = () =>
  invalidState(`A workspace has at most ${MAX_LIVE_API_KEYS} live API keys: revoke one first.`);

builder.queryFields((t) => ({
  apiKeys: t.field({
    type: ApiKeyList,
    description: `The workspace's API keys, newest first: live ones (rotated keys in their grace period included), or every key with include_revoked. ${OWNER_ONLY}`,
    authScopes: { owner: true },
    args: {
      include_revoked: t.arg.boolean({
        defaultValue: false,
        description: "Also list revoked keys (default false).",
      }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.apiKey.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(!args.include_revoked && live(new Date())),
            ...cursor,
          },
          ...page,
        }),
      ),
  }),
}));

builder.mutationFields((t) => ({
  createApiKey: t.field({
    type: CreatedApiKey,
    description: `Makes an API key; its secret is in this answer only. At most ${MAX_LIVE_API_KEYS} live keys per workspace (else invalid_state). ${OWNER_ONLY}`,
    authScopes: { owner: true },
    args: {
      input: t.arg({ type: CreateApiKeyInput, required: true, description: "The key's name and scopes." }),
    },
    resolve: async (_root, { input }, ctx) => {
      const name = requiredText("input.name", input.name);
      const scopes = checkedScopes(input.scopes);
      return ctx.db.$transaction(async (tx) => {
        if ((await liveKeys(tx, ctx.credential.workspaceId)).count >= MAX_LIVE_API_KEYS) throw tooMany();
        const created = await newKey(tx, ctx, name, scopes);
        await recordAudit(tx, ctx, { action: "api_key.created", targetId: created.api_key.id });
        return created;
      });
    },
  }),
  revokeApiKey: t.field({
    type: ApiKey,
    description: `Revokes a key at once (a rotated key's grace period ends too): once this answers it works on no server process. Revoking a revoked key changes nothing. ${OWNER_ONLY}`,
    authScopes: { owner: true },
    args: { id: t.arg.id({ required: true, description: "The key's id (`key_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      const where = { id: String(id), workspaceId: ctx.credential.workspaceId };
      const count = await ctx.db.$transaction(async (tx) => {
        const now = await lockKeyChanges(tx, ctx.credential.workspaceId);
        const { count } = await tx.apiKey.updateMany({
          where: { ...where, ...live(now) },
          data: { revokedAt: now },
        });
        if (count > 0) await recordAudit(tx, ctx, { action: "api_key.revoked", targetId: String(id) });
        return count;
      });
      if (count > 0) await ctx.revocations.revoked("api_key", [String(id)]);
      return found("api_key", String(id), await ctx.db.apiKey.findFirst({ where }));
    },
  }),
  rotateApiKey: t.field({
    type: RotatedApiKey,
    description:
      `Replaces a live key with a new one of the same name and scopes. The old key keeps working for grace_seconds (0–${MAX_GRACE_SECONDS}, default 0: it stops at once); ` +
      `a revoked key cannot be rotated (invalid_state). ${OWNER_ONLY}`,
    authScopes: { owner: true },
    args: {
      id: t.arg.id({ required: true, description: "The key's id (`key_…`)." }),
      grace_seconds: t.arg.int({
        defaultValue: 0,
        description: `How long the old key keeps working, in seconds: 0–${MAX_GRACE_SECONDS} (7 days), default 0.`,
      }),
    },
    resolve: async (_root, args, ctx) => {
      const grace = args.grace_seconds ?? 0;
      if (!Number.isInteger(grace) || grace < 0 || grace > MAX_GRACE_SECONDS) {
        throw validationFailed(
          "grace_seconds",
          `grace_seconds must be an integer from 0 to ${MAX_GRACE_SECONDS} (7 days).`,
        );
      }
      const id = String(args.id);
      const workspaceId = ctx.credential.workspaceId;
      const rotated = await ctx.db.$transaction(async (tx) => {
        const { count, now } = await liveKeys(tx, workspaceId);
        const old = found("api_key", id, await tx.apiKey.findFirst({ where: { id, workspaceId } }));
        if (old.revokedAt && old.revokedAt <= now)
          throw invalidState("This key is revoked: create a new one instead.");
        // With a grace period both keys are live for a while.
        if (grace > 0 && count >= MAX_LIVE_API_KEYS) throw tooMany();
        const created = await newKey(tx, ctx, old.name, old.scopes);
        const ends = new Date(now.getTime() + grace * 1000);
        const previous = await tx.apiKey.update({
          where: { id },
          // A key already in a grace period keeps the earlier end.
          data: { revokedAt: old.revokedAt && old.revokedAt < ends ? old.revokedAt : ends },
        });
        await recordAudit(tx, ctx, { action: "api_key.rotated", targetId: id });
        await recordAudit(tx, ctx, { action: "api_key.created", targetId: created.api_key.id });
        return { ...created, previous };
      });
      // Cached copies of the old key learn its new end (at once, when there is no grace).
      await ctx.revocations.revoked("api_key", [id]);
      return rotated;
    },
  }),
}));
