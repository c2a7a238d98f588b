import { createHash, randomInt, timingSafeEqual } from "node:crypto";
import type { Revocations } from "../../schema/context.ts";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import { newId } from "../../schema/lib/ids.ts";
import { lockWorkspace } from "../../schema/lib/locks.ts";
import { PLAN_LIMITS } from "../../schema/lib/plans.ts";
import { linkRefusal } from "../../schema/lib/provider-trust.ts";
import { normalEmail } from "../accounts/workspaces.ts";
import { type AuditRequest, recordUserAudit } from "../audit/record.ts";
import { randomBase62 } from "../auth/api-keys.ts";

/** A claim attempt's code and link live this long (docs/api/agents.md). */
export const CLAIM_ATTEMPT_TTL_SECONDS = 600;
/** Wrong codes an attempt survives: the fifth kills it, and a right code after that is refused. */
export const MAX_WRONG_CODES = 5;
/** Seconds an agent waits between polls of the claim grant (`interval`); faster is `slow_down`. */
export const POLL_INTERVAL_SECONDS = 5;
export const CLAIM_PAGE_PATH = "/agent/claim";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const codeHash = (attemptId: string, code: string) => sha256(`${attemptId}:${code}`);

export interface StartedAttempt {
  attemptId: string;
  /** The `claim` block of docs/api/agents.md. */
  claim: { user_code: string; verification_uri: string; expires_in: number; interval: number };
}

/**
 * Starts a claim ceremony for a registration: a 6-digit code for the agent to show its user, and a
 * verification_uri carrying a one-time `claim_attempt_token` (never the code). A new attempt ends
 * the registration's earlier ones.
 */
export async function startClaimAttempt(
  db: PrismaClient,
  input: { registrationId: string; loginHint: string | null; hostUrl: string },
): Promise<StartedAttempt> {
  const attemptId = newId("claimAttempt");
  const attemptToken = `cat_${randomBase62(43)}`;
  const userCode = String(randomInt(0, 1_000_000)).padStart(6, "0");
  await db.$transaction([
    db.claimAttempt.updateMany({
      where: { registrationId: input.registrationId, status: "pending" },
      data: { status: "dead" },
    }),
    db.claimAttempt.create({
      data: {
        id: attemptId,
        registrationId: input.registrationId,
        attemptTokenHash: sha256(attemptToken),
        codeHash: codeHash(attemptId, userCode),
        loginHint: input.loginHint,
        expiresAt: new Date(Date.now() + CLAIM_ATTEMPT_TTL_SECONDS * 1000),
      },
    }),
  ]);
  const verificationUri = `${input.hostUrl}${CLAIM_PAGE_PATH}?claim_attempt_token=${attemptToken}`;
  return {
    attemptId,
    claim: {
      user_code: userCode,
      verification_uri: verificationUri,
      expires_in: CLAIM_ATTEMPT_TTL_SECONDS,
      interval: POLL_INTERVAL_SECONDS,
    },
  };
}

/** What the claim page shows about an attempt. */
export interface ClaimAttemptView {
  attemptId: string;
  status: "pending" | "approved" | "denied" | "dead" | "expired";
  expiresAt: Date;
  wrongCodesLeft: number;
  loginHint: string | null;
  registration: {
    id: string;
    type: "service_auth" | "anonymous" | "identity_assertion";
    agentName: string | null;
    /** The scopes the agent will hold once claimed. */
    scopes: string[];
    /** An anonymous agent's sandbox: the only workspace it can be claimed into. */
    sandboxWorkspaceId: string | null;
    /** An identity_assertion agent's workspace (whose trusted provider vouched for it): the only one it can join. */
    providerWorkspaceId: string | null;
  };
}

/** The attempt a `claim_attempt_token` names, or null. */
export async function findClaimAttempt(
  db: PrismaClient,
  attemptToken: string,
): Promise<ClaimAttemptView | null> {
  if (!/^cat_[0-9A-Za-z]{43}$/.test(attemptToken)) return null;
  const row = await db.claimAttempt.findUnique({
    where: { attemptTokenHash: sha256(attemptToken) },
    include: { registration: true },
  });
  if (!row) return null;
  const expired = row.status === "pending" && row.expiresAt.getTime() <= Date.now();
  return {
    attemptId: row.id,
    status: expired ? "expired" : row.status,
    expiresAt: row.expiresAt,
    wrongCodesLeft: Math.max(0, MAX_WRONG_CODES - row.failedCodes),
    loginHint: row.loginHint,
    registration: {
      id: row.registration.id,
      type: row.registration.type,
      agentName: row.registration.agentName,
      scopes: row.registration.postClaimScopes,
      sandboxWorkspaceId: row.registration.type === "anonymous" ? row.registration.workspaceId : null,
      providerWorkspaceId:
        row.registration.type === "identity_assertion" ? row.registration.workspaceId : null,
    },
  };
}

/**
 * Whether the account signed in as `email` may approve a claim started for `loginHint`. A claim that
 * names its person (service_auth, an anonymous agent's claim ceremony, an ID-JAG carrying an
 * e-mail) is bound to the account with that e-mail, compared trimmed and in any letter case; only a
 * claim with no login hint may be approved by any signed-in account.
 */
export function claimIsFor(loginHint: string | null, email: string): boolean {
  return loginHint === null || normalEmail(loginHint) === normalEmail(email);
}

export type ClaimDecision =
  | { outcome: "approved"; workspaceId: string }
  /** Approving was refused before the code was looked at: the claim names another person. Nothing changed. */
  | { outcome: "wrong_person"; loginHint: string }
  | { outcome: "denied" }
  | { outcome: "wrong_code"; wrongCodesLeft: number }
  /** The attempt cannot be decided any more: too many wrong codes, expired, or already decided. */
  | { outcome: "closed"; reason: "too_many_wrong_codes" | "expired" | "decided" }
  /** The user may not claim into that workspace (not its owner, agent auth off, plan cap reached). */
  | {
      outcome: "refused";
      reason: "not_owner" | "agent_auth_disabled" | "plan_limit_reached" | "issuer_not_trusted";
      message: string;
    };

/**
 * The user's answer on the claim page, decided under a lock on the attempt's row so that
 * concurrent submissions are counted one by one. Approving needs the right code (a wrong one
 * counts against MAX_WRONG_CODES, and once those are used up even the right code is refused);
 * denying needs no code. A claim started with a login hint is approved only by the account with
 * that e-mail (claimIsFor): anyone else's approval is `wrong_person`, checked before the code, and
 * changes nothing, not even the wrong-code count; anyone signed in may deny it. On approval the
 * registration becomes active in the chosen workspace at its post-claim scopes, and every token it
 * held before (an anonymous agent's pre-claim tokens) is revoked; an anonymous agent's sandbox
 * becomes a workspace the user owns.
 */
export async function decideClaim(
  db: PrismaClient,
  input: {
    attemptId: string;
    userId: string;
    approve: boolean;
    code?: string;
    workspaceId?: string;
    /** The request deciding, whose id and client the audit record carries. */
    request?: AuditRequest;
  },
  /** Told of the pre-claim tokens an approval revokes (absent only in tests that never cached them). */
  revocations?: Revocations,
): Promise<ClaimDecision> {
  let claimed: string | undefined;
  const decision = await db.$transaction(async (tx) => {
    await tx.$queryRaw`select id from claim_attempts where id = ${input.attemptId} for update`;
    const attempt = await tx.claimAttempt.findUnique({
      where: { id: input.attemptId },
      include: { registration: true },
    });
    if (!attempt) return { outcome: "closed", reason: "decided" } as const;
    if (attempt.status !== "pending") {
      return {
        outcome: "closed",
        reason: attempt.failedCodes >= MAX_WRONG_CODES ? "too_many_wrong_codes" : "decided",
      } as const;
    }
    if (attempt.expiresAt.getTime() <= Date.now()) {
      await tx.claimAttempt.update({ where: { id: attempt.id }, data: { status: "dead" } });
      return { outcome: "closed", reason: "expired" } as const;
    }
    // The registration's row too (after the attempt's, the order its update below has always taken): two
    // attempts of one registration, started at the same time, cannot both decide it.
    await tx.$queryRaw`select id from agent_registrations where id = ${attempt.registrationId} for update`;
    const current = await tx.agentRegistration.findUniqueOrThrow({
      where: { id: attempt.registrationId },
      select: { status: true, revokedAt: true },
    });
    if (current.status !== "pending" || current.revokedAt) {
      await tx.claimAttempt.update({ where: { id: attempt.id }, data: { status: "dead" } });
      return { outcome: "closed", reason: "decided" } as const;
    }
    if (input.approve && attempt.loginHint !== null) {
      const user = await tx.user.findUnique({ where: { id: input.userId }, select: { email: true } });
      if (!user || !claimIsFor(attempt.loginHint, user.email))
        return { outcome: "wrong_person", loginHint: attempt.loginHint } as const;
    }
    const registration = attempt.registration;
    if (!input.approve) {
      await tx.claimAttempt.update({
        where: { id: attempt.id },
        data: { status: "denied", userId: input.userId },
      });
      // An anonymous agent keeps its sandbox and pre-claim tokens; a service_auth request is over.
      if (registration.type !== "anonymous") {
        await tx.agentRegistration.update({ where: { id: registration.id }, data: { status: "denied" } });
      }
      await recordUserAudit(
        tx,
        input.userId,
        {
          action: "agent_registration.denied",
          targetId: registration.id,
          workspaceId: registration.workspaceId,
        },
        input.request,
      );
      return { outcome: "denied" } as const;
    }

    const given = Buffer.from(codeHash(attempt.id, input.code ?? ""));
    if (!timingSafeEqual(given, Buffer.from(attempt.codeHash))) {
      const failedCodes = attempt.failedCodes + 1;
      await tx.claimAttempt.update({
        where: { id: attempt.id },
        data: { failedCodes, ...(failedCodes >= MAX_WRONG_CODES && { status: "dead" }) },
      });
      return failedCodes >= MAX_WRONG_CODES
        ? ({ outcome: "closed", reason: "too_many_wrong_codes" } as const)
        : ({ outcome: "wrong_code", wrongCodesLeft: MAX_WRONG_CODES - failedCodes } as const);
    }

    const workspaceId = registration.type === "anonymous" ? registration.workspaceId! : input.workspaceId;
    if (!workspaceId)
      return {
        outcome: "refused",
        reason: "not_owner",
        message: "Choose the workspace the agent may work in.",
      } as const;
    // Claims into one workspace take turns: two at once cannot both pass its plan's cap, nor miss agent access turned off.
    await lockWorkspace(tx, workspaceId);
    const workspace = await tx.workspace.findUnique({
      where: { id: workspaceId },
      select: {
        plan: true,
        agentAuthEnabled: true,
        sandboxExpiresAt: true,
        memberships: { where: { userId: input.userId }, select: { role: true } },
      },
    });
    if (registration.type === "anonymous") {
      // The sandbox has no owner yet: whoever holds the code becomes it.
      await tx.membership.upsert({
        where: { workspaceId_userId: { workspaceId, userId: input.userId } },
        create: { workspaceId, userId: input.userId, role: "owner" },
        update: { role: "owner" },
      });
      await tx.workspace.update({
        where: { id: workspaceId },
        data: { sandboxExpiresAt: null, agentAuthEnabled: true },
      });
    } else {
      if (workspace?.memberships[0]?.role !== "owner") {
        return {
          outcome: "refused",
          reason: "not_owner",
          message: "Only an owner of the workspace can let an agent in.",
        } as const;
      }
      if (!workspace.agentAuthEnabled) {
        return {
          outcome: "refused",
          reason: "agent_auth_disabled",
          message: "Agent access is turned off for this workspace.",
        } as const;
      }
      // An agent that proved who it is with an ID-JAG can only join the workspace whose entry for that issuer verified it.
      if (registration.type === "identity_assertion") {
        const refusal = await linkRefusal(tx, registration, workspaceId);
        if (refusal) return { outcome: "refused", reason: "issuer_not_trusted", message: refusal } as const;
      }
      const active = await tx.agentRegistration.count({
        where: { workspaceId, status: "active", revokedAt: null },
      });
      const cap = PLAN_LIMITS[workspace.plan].agent_registrations;
      if (active >= cap) {
        return {
          outcome: "refused",
          reason: "plan_limit_reached",
          message: `This workspace's ${workspace.plan} plan allows ${cap} agents; revoke one first.`,
        } as const;
      }
    }
    const now = new Date();
    await tx.claimAttempt.update({
      where: { id: attempt.id },
      data: { status: "approved", userId: input.userId, workspaceId },
    });
    await tx.agentRegistration.update({
      where: { id: registration.id },
      data: {
        status: "active",
        workspaceId,
        scopes: registration.postClaimScopes,
        claimedAt: now,
        claimedByUserId: input.userId,
      },
    });
    await tx.agentToken.updateMany({
      where: { registrationId: registration.id, revokedAt: null },
      data: { revokedAt: now },
    });
    await recordUserAudit(
      tx,
      input.userId,
      { action: "agent_registration.approved", targetId: registration.id, workspaceId },
      input.request,
    );
    claimed = registration.id;
    return { outcome: "approved", workspaceId } as const;
  });
  if (claimed) await revocations?.revoked("agent_registration", [claimed]);
  return decision;
}

/** A fresh claim token (`clm_…`) and the hash stored for it. */
export function newClaimToken(): { token: string; hash: string } {
  const token = `clm_${randomBase62(43)}`;
  return { token, hash: sha256(token) };
}

export const hashClaimToken = sha256;
