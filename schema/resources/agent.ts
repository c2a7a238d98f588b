import { builder } from "../builder.ts";
import type { Context } from "../context.ts";
import { AgentRegistrationStatus, AgentRegistrationType } from "../generated/prisma/enums.ts";
import { recordAudit } from "../lib/audit.ts";
import { ApiError, validationFailed } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { listPage } from "../lib/list-page.ts";
import { PLAN_LIMITS, type PlanLimits, type PlanName } from "../lib/plans.ts";
import { providerRemoved, revokeProviderRegistrations } from "../lib/provider-trust.ts";
import { ProviderUrlError, providerUrl } from "../lib/provider-url.ts";
import { found, owned } from "../lib/records.ts";
import { rest } from "../lib/rest.ts";
import { notNull } from "../lib/validate.ts";
import { Deleted, listType, objectKind, PlanEnum, pageArgs } from "./shared.ts";

/** The longest `max_auth_age` a provider entry may set: 30 days. */
const MAX_AUTH_AGE_LIMIT = 30 * 24 * 3600;

const planLimitReached = (message: string) =>
  new ApiError(403, "permission_error", "plan_limit_reached", message);

const AgentLimits = builder.objectRef<PlanLimits>("AgentLimits").implement({
  description: "What the workspace's plan allows agents.",
  fields: (t) => ({
    agent_registrations: t.exposeInt("agent_registrations", {
      description:
        "Active agent registrations at once; claiming one more is refused with plan_limit_reached.",
    }),
    agent_tokens_per_registration: t.exposeInt("agent_tokens_per_registration", {
      description: "Live access tokens per registration; issuing one more revokes the oldest.",
    }),
    agent_token_lifetime_seconds: t.exposeInt("agent_token_lifetime_seconds", {
      description: "The longest an agent access token lives.",
    }),
    trusted_providers: t.exposeInt("trusted_providers", {
      description: "Trusted ID-JAG providers; one more is refused with plan_limit_reached.",
    }),
  }),
});

interface AgentSettingsShape {
  workspaceId: string;
  plan: PlanName;
  agentAuthEnabled: boolean;
}

const AgentSettings = builder.objectRef<AgentSettingsShape>("AgentSettings").implement({
  description:
    "Whether and how AI agents may work in the workspace. Visible with agents.read or agents.write.",
  fields: (t) => ({
    object: objectKind(t, "agent_settings"),
    agent_auth_enabled: t.exposeBoolean("agentAuthEnabled", {
      description:
        "Whether agents may register and use their tokens here. Off: every agent token of the workspace stops working at once.",
    }),
    plan: t.expose("plan", {
      type: PlanEnum,
      description: "The workspace's plan; `limits` follows from it.",
    }),
    limits: t.field({
      type: AgentLimits,
      description: "The plan's agent caps.",
      resolve: (s) => PLAN_LIMITS[s.plan],
    }),
    active_registrations: t.int({
      description: "Registrations now active (counted against limits.agent_registrations).",
      resolve: (s, _args, ctx) =>
        ctx.db.agentRegistration.count({
          where: { workspaceId: s.workspaceId, status: "active", revokedAt: null },
        }),
    }),
    trusted_providers: t.int({
      description: "Trusted ID-JAG providers (counted against limits.trusted_providers).",
      resolve: (s, _args, ctx) => ctx.db.trustedProvider.count({ where: { workspaceId: s.workspaceId } }),
    }),
  }),
});

export const TrustedProvider = builder.prismaObject("TrustedProvider", {
  description:
    "An ID-JAG issuer whose identity assertions agents may register with. Visible with agents.read or agents.write.",
  authScopes: { readable: "agents" },
  fields: (t) => ({
    object: objectKind(t, "trusted_provider"),
    id: t.exposeID("id", { description: "`tpr_…`." }),
    issuer: t.exposeString("issuer", {
      description: "The provider's issuer URL: an ID-JAG's `iss` must equal it exactly.",
    }),
    jwks_url: t.exposeString("jwksUrl", {
      description: "Where the provider publishes its signing keys (JWKS).",
    }),
    max_auth_age: t.exposeInt("maxAuthAge", {
      nullable: true,
      description:
        "When set, an ID-JAG must carry `auth_time` at most this many seconds old (else 401 login_required). Null: auth_time is not checked.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the provider was added." }),
    updated_at: t.expose("updatedAt", { type: "DateTime", description: "When the entry was last changed." }),
  }),
});

const AgentRegistrationTypeEnum = builder.enumType(AgentRegistrationType, {
  name: "AgentRegistrationType",
  description: "How the agent registered.",
  values: {
    service_auth: { description: "For a user named by e-mail, who confirmed it on the claim page." },
    anonymous: { description: "Without a user, in a sandbox workspace a user later claimed." },
    identity_assertion: {
      description: "With an ID-JAG from a trusted provider, confirmed once by the user.",
    },
  },
});

const AgentRegistrationStatusEnum = builder.enumType(AgentRegistrationStatus, {
  name: "AgentRegistrationStatus",
  description: "Where the registration is.",
  values: {
    pending: { description: "Waiting for the user to confirm it." },
    active: { description: "Confirmed: the agent may get tokens." },
    denied: { description: "The user refused it." },
    revoked: {
      description: "Revoked by an owner, the agent or its identity provider: its tokens no longer work.",
    },
  },
});

export const AgentRegistration = builder.prismaObject("AgentRegistration", {
  description: "An AI agent let into the workspace. Visible with agents.read or agents.write.",
  authScopes: { readable: "agents" },
  fields: (t) => ({
    object: objectKind(t, "agent_registration"),
    id: t.exposeID("id", {
      description: "`areg_…`: also the credential id of its requests in the request logs.",
    }),
    type: t.expose("type", { type: AgentRegistrationTypeEnum, description: "How the agent registered." }),
    status: t.expose("status", {
      type: AgentRegistrationStatusEnum,
      description: "pending, active, denied or revoked.",
    }),
    agent_name: t.exposeString("agentName", {
      nullable: true,
      description: "The name the agent gave itself, if any.",
    }),
    login_hint: t.exposeString("loginHint", {
      nullable: true,
      description: "The e-mail of the user it registered for, if any.",
    }),
    scopes: t.exposeStringList("scopes", { description: "What its tokens may do." }),
    provider_issuer: t.exposeString("providerIssuer", {
      nullable: true,
      description: "identity_assertion: the provider's issuer.",
    }),
    provider_subject: t.exposeString("providerSubject", {
      nullable: true,
      description: "identity_assertion: the user's `sub` at that provider.",
    }),
    live_tokens: t.int({
      description: "Access tokens now valid (neither expired nor revoked).",
      resolve: (reg, _args, ctx) =>
        ctx.db.agentToken.count({
          where: { registrationId: reg.id, revokedAt: null, expiresAt: { gt: new Date() } },
        }),
    }),
    last_used_at: t.expose("lastUsedAt", {
      type: "DateTime",
      nullable: true,
      description:
        "When one of its tokens last made a request (recorded at most once a minute); null if never.",
    }),
    claimed_at: t.expose("claimedAt", {
      type: "DateTime",
      nullable: true,
      description: "When a user confirmed it.",
    }),
    revoked_at: t.expose("revokedAt", {
      type: "DateTime",
      nullable: true,
      description: "When it was revoked; null while it is not.",
    }),
    created_at: t.expose("createdAt", { type: "DateTime", description: "When the agent registered." }),
  }),
});

const TrustedProviderList = listType("TrustedProvider", TrustedProvider);
const AgentRegistrationList = listType("AgentRegistration", AgentRegistration);

const settingsOf = (ctx: Context) =>
  ctx.db.workspace.findUniqueOrThrow({
    where: { id: ctx.credential.workspaceId },
    select: { id: true, plan: true, agentAuthEnabled: true },
  });
const inWorkspace = (ctx: Context, id: string) => ({ id, workspaceId: ctx.credential.workspaceId });

/**
 * An issuer or JWKS URL as given (an issuer must match `iss` exactly): https, or http on a loopback
 * host; production's rules for addresses Kontor may call (https, public) apply on top.
 */
async function checkedUrl(param: string, raw: string, ctx: Context): Promise<string> {
  const value = raw.trim();
  try {
    providerUrl(value, param, false);
    await ctx.webhooks.checkUrl(value);
  } catch (error) {
    if (error instanceof ProviderUrlError) throw validationFailed(param, error.message);
    if (error instanceof ApiError && error.code === "validation_failed")
      throw validationFailed(param, error.message.replace(/^url\b/, param));
    throw error;
  }
  return value;
}

builder.queryFields((t) => ({
  agentSettings: t.field({
    type: AgentSettings,
    description: "The workspace's agent settings and caps. Needs agents.read.",
    extensions: rest("GET /agent-settings", "Retrieve the agent settings"),
    authScopes: { scope: "agents.read" },
    resolve: async (_root, _args, ctx) => {
      const ws = await settingsOf(ctx);
      return { workspaceId: ws.id, plan: ws.plan, agentAuthEnabled: ws.agentAuthEnabled };
    },
  }),
  trustedProviders: t.field({
    type: TrustedProviderList,
    description: "The ID-JAG providers the workspace trusts, newest first. Needs agents.read.",
    extensions: rest("GET /trusted-providers", "List trusted ID-JAG providers"),
    authScopes: { scope: "agents.read" },
    args: { ...pageArgs },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.trustedProvider.findMany({
          where: { workspaceId: ctx.credential.workspaceId, ...cursor },
          ...page,
        }),
      ),
  }),
  trustedProvider: t.prismaField({
    type: TrustedProvider,
    nullable: true,
    description: "One trusted provider by id; an unknown id is a not_found error. Needs agents.read.",
    extensions: rest("GET /trusted-providers/:id", "Retrieve a trusted ID-JAG provider"),
    authScopes: { scope: "agents.read" },
    args: { id: t.arg.id({ required: true, description: "The provider entry's id (`tpr_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found(
        "trusted_provider",
        args.id,
        await ctx.db.trustedProvider.findFirst({ ...query, where: inWorkspace(ctx, args.id) }),
      ),
  }),
  agentRegistrations: t.field({
    type: AgentRegistrationList,
    description:
      "The agents registered in the workspace, newest first, with their scopes, live tokens and last use. Needs agents.read.",
    extensions: rest("GET /agent-registrations", "List agent registrations"),
    authScopes: { scope: "agents.read" },
    args: {
      status: t.arg({ type: AgentRegistrationStatusEnum, description: "Only registrations in this status." }),
      ...pageArgs,
    },
    resolve: (_root, args, ctx, info) =>
      listPage(args, ctx, info, ({ cursor, ...page }) =>
        ctx.db.agentRegistration.findMany({
          where: {
            workspaceId: ctx.credential.workspaceId,
            ...(args.status && { status: args.status }),
            ...cursor,
          },
          ...page,
        }),
      ),
  }),
  agentRegistration: t.prismaField({
    type: AgentRegistration,
    nullable: true,
    description: "One agent registration by id; an unknown id is a not_found error. Needs agents.read.",
    extensions: rest("GET /agent-registrations/:id", "Retrieve an agent registration"),
    authScopes: { scope: "agents.read" },
    args: { id: t.arg.id({ required: true, description: "The registration's id (`areg_…`)." }) },
    resolve: async (query, _root, args, ctx) =>
      found(
        "agent_registration",
        args.id,
        await ctx.db.agentRegistration.findFirst({ ...query, where: inWorkspace(ctx, args.id) }),
      ),
  }),
}));

builder.mutationFields((t) => ({
  updateAgentSettings: t.field({
    type: AgentSettings,
    description:
      "Turns agent access on or off. Off: registering, claiming into this workspace and every agent token of the workspace stop working at once; on again: live tokens work again. Needs agents.write.",
    extensions: rest("PATCH /agent-settings", "Turn agent access on or off"),
    authScopes: { scope: "agents.write" },
    args: {
      agent_auth_enabled: t.arg.boolean({
        description: "true lets agents in, false shuts them out; cannot be null.",
      }),
    },
    resolve: async (_root, args, ctx) => {
      const enabled = notNull("agent_auth_enabled", args.agent_auth_enabled);
      const ws =
        enabled === undefined
          ? await settingsOf(ctx)
          : await ctx.db.$transaction(async (tx) => {
              const id = ctx.credential.workspaceId;
              // Only a change is recorded: turning on what is on changes nothing.
              const { count } = await tx.workspace.updateMany({
                where: { id, agentAuthEnabled: !enabled },
                data: { agentAuthEnabled: enabled },
              });
              if (count > 0)
                await recordAudit(tx, ctx, {
                  action: enabled ? "agent_access.enabled" : "agent_access.disabled",
                  targetId: id,
                });
              return tx.workspace.findUniqueOrThrow({
                where: { id },
                select: { id: true, plan: true, agentAuthEnabled: true },
              });
            });
      // Cached agent tokens of the workspace are looked up again, whichever way it went.
      if (enabled !== undefined) await ctx.revocations.revoked("workspace", [ws.id]);
      return { workspaceId: ws.id, plan: ws.plan, agentAuthEnabled: ws.agentAuthEnabled };
    },
  }),
  createTrustedProvider: t.prismaField({
    type: TrustedProvider,
    description:
      "Trusts an ID-JAG provider: agents may then register with its identity assertions (each user confirms once). The plan caps how many (limits.trusted_providers; free: none). Needs agents.write.",
    extensions: rest("POST /trusted-providers", "Trust an ID-JAG provider", 201, ["plan_limit_reached"]),
    authScopes: { scope: "agents.write" },
    args: {
      issuer: t.arg.string({
        required: true,
        description:
          "The provider's issuer URL, exactly as its ID-JAGs' `iss` says: https (http only for localhost outside production).",
      }),
      jwks_url: t.arg.string({
        required: true,
        description: "The provider's JWKS URL: https (http only for localhost outside production).",
      }),
      max_auth_age: t.arg.int({
        description: `Seconds (1–${MAX_AUTH_AGE_LIMIT}): when set, an ID-JAG's auth_time must be present and at most this old.`,
      }),
    },
    resolve: async (query, _root, args, ctx) => {
      const issuer = await checkedUrl("issuer", args.issuer, ctx);
      const jwksUrl = await checkedUrl("jwks_url", args.jwks_url, ctx);
      const maxAuthAge = args.max_auth_age ?? null;
      if (maxAuthAge !== null && (maxAuthAge < 1 || maxAuthAge > MAX_AUTH_AGE_LIMIT)) {
        throw validationFailed(
          "max_auth_age",
          `max_auth_age must be between 1 and ${MAX_AUTH_AGE_LIMIT} seconds.`,
        );
      }
      return ctx.db.$transaction(async (tx) => {
        // Serializes creations per workspace, so two at once cannot both pass the cap.
        await tx.$queryRaw`select id from workspaces where id = ${ctx.credential.workspaceId} for update`;
        const cap = PLAN_LIMITS[ctx.credential.plan].trusted_providers;
        const count = await tx.trustedProvider.count({ where: { workspaceId: ctx.credential.workspaceId } });
        if (count >= cap) {
          throw planLimitReached(
            cap === 0
              ? `The ${ctx.credential.plan} plan cannot trust ID-JAG providers; upgrade to add one.`
              : `The ${ctx.credential.plan} plan allows ${cap} trusted provider${cap === 1 ? "" : "s"}; delete one first.`,
          );
        }
        if (
          await tx.trustedProvider.findFirst({
            where: { workspaceId: ctx.credential.workspaceId, issuer },
            select: { id: true },
          })
        ) {
          throw validationFailed("issuer", "This issuer is already trusted by the workspace.");
        }
        const created = await tx.trustedProvider.create({
          ...query,
          data: {
            id: newId("trustedProvider"),
            workspaceId: ctx.credential.workspaceId,
            issuer,
            jwksUrl,
            maxAuthAge,
          },
        });
        await recordAudit(tx, ctx, { action: "trusted_provider.created", targetId: created.id });
        return created;
      });
    },
  }),
  deleteTrustedProvider: t.field({
    type: Deleted,
    description:
      "Stops trusting the provider: its ID-JAGs and security events are refused here from now on, and the agents linked through it (this workspace's registrations of its issuer, pending and active) are revoked at once: their tokens stop working. Needs agents.write.",
    extensions: rest("DELETE /trusted-providers/:id", "Stop trusting an ID-JAG provider"),
    authScopes: { scope: "agents.write" },
    args: { id: t.arg.id({ required: true, description: "The provider entry's id (`tpr_…`)." }) },
    resolve: async (_root, { id }, ctx) => {
      const { jwksUrl, revoked } = await ctx.db.$transaction(async (tx) => {
        const entry = found(
          "trusted_provider",
          id,
          await tx.trustedProvider.findFirst({ where: inWorkspace(ctx, id) }),
        );
        await owned("trusted_provider", id, () => tx.trustedProvider.delete({ where: inWorkspace(ctx, id) }));
        await recordAudit(tx, ctx, { action: "trusted_provider.deleted", targetId: id });
        const revoked = await revokeProviderRegistrations(tx, entry.workspaceId, entry.issuer);
        for (const registrationId of revoked)
          await recordAudit(tx, ctx, { action: "agent_registration.revoked", targetId: registrationId });
        return { jwksUrl: entry.jwksUrl, revoked };
      });
      await ctx.revocations.revoked("agent_registration", revoked);
      providerRemoved(jwksUrl);
      return { id, object: "trusted_provider", deleted: true as const };
    },
  }),
  revokeAgentRegistration: t.prismaField({
    type: AgentRegistration,
    description:
      "Revokes the agent: every token it holds stops working, and its identity assertion can no longer be exchanged. Revoking a revoked one changes nothing. Needs agents.write.",
    extensions: rest("POST /agent-registrations/:id/revoke", "Revoke an agent registration"),
    authScopes: { scope: "agents.write" },
    args: { id: t.arg.id({ required: true, description: "The registration's id (`areg_…`)." }) },
    resolve: async (query, _root, { id }, ctx) => {
      const registration = await ctx.db.$transaction(async (tx) => {
        found(
          "agent_registration",
          id,
          await tx.agentRegistration.findFirst({ where: inWorkspace(ctx, id), select: { id: true } }),
        );
        const now = new Date();
        // In decideClaim's order (its attempt, the registration, the tokens), so a revoke and a claim decided at once cannot deadlock.
        await tx.claimAttempt.updateMany({
          where: { registrationId: id, status: "pending" },
          data: { status: "dead" },
        });
        // One statement decides: of concurrent revokes one revokes (and is recorded), the others find it revoked.
        const { count } = await tx.agentRegistration.updateMany({
          where: { ...inWorkspace(ctx, id), revokedAt: null },
          data: { status: "revoked", revokedAt: now },
        });
        if (count > 0) {
          await tx.agentToken.updateMany({
            where: { registrationId: id, revokedAt: null },
            data: { revokedAt: now },
          });
          await recordAudit(tx, ctx, { action: "agent_registration.revoked", targetId: id });
        }
        return tx.agentRegistration.findFirstOrThrow({ ...query, where: inWorkspace(ctx, id) });
      });
      await ctx.revocations.revoked("agent_registration", [String(id)]);
      return registration;
    },
  }),
}));
