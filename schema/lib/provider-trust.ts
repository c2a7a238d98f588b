import type { Prisma } from "../generated/prisma/client.ts";

/**
 * Trust in an ID-JAG provider is per workspace: a trusted-provider entry (`tpr_…`) belongs to the
 * workspace that added it, and the identity_assertion registrations of its issuer in that workspace
 * (pending and active) are linked through it. This module holds what happens when an entry goes.
 */

/**
 * Revokes the registrations linked through a workspace's entry for `issuer`, inside the caller's
 * transaction: the workspace's identity_assertion registrations of that issuer that are not revoked
 * yet (pending and active) become `revoked`, their tokens stop, their pending claim attempts die.
 * Returns their ids: tell `revocations.revoked("agent_registration", ids)` once the transaction committed.
 */
export async function revokeProviderRegistrations(
  tx: Prisma.TransactionClient,
  workspaceId: string,
  issuer: string,
  now = new Date(),
): Promise<string[]> {
  const rows = await tx.agentRegistration.findMany({
    where: {
      workspaceId,
      type: "identity_assertion",
      providerIssuer: issuer,
      revokedAt: null,
      status: { in: ["pending", "active"] },
    },
    select: { id: true },
  });
  const ids = rows.map((row) => row.id);
  if (ids.length === 0) return ids;
  await tx.agentRegistration.updateMany({
    where: { id: { in: ids } },
    data: { status: "revoked", revokedAt: now },
  });
  await tx.agentToken.updateMany({
    where: { registrationId: { in: ids }, revokedAt: null },
    data: { revokedAt: now },
  });
  await tx.claimAttempt.updateMany({
    where: { registrationId: { in: ids }, status: "pending" },
    data: { status: "dead" },
  });
  return ids;
}

/**
 * Why an identity_assertion registration may not be approved into `workspaceId`, or null when it
 * may: the workspace must have an entry for its issuer, and be the registration's own (the one
 * whose entry verified the ID-JAG). A registration made before trust was per workspace carries
 * none, and may go to any workspace that trusts its issuer.
 */
export async function linkRefusal(
  tx: Prisma.TransactionClient,
  registration: { workspaceId: string | null; providerIssuer: string | null },
  workspaceId: string,
): Promise<string | null> {
  const issuer = registration.providerIssuer ?? "";
  if ((await tx.trustedProvider.count({ where: { workspaceId, issuer } })) === 0) {
    return `This workspace does not trust ${issuer}, the provider that vouches for this agent.`;
  }
  if (registration.workspaceId !== null && registration.workspaceId !== workspaceId) {
    return `This agent asked to join the workspace whose trusted provider ${issuer} vouched for it; choose that workspace.`;
  }
  return null;
}

type RemovedListener = (jwksUrl: string) => void;
const removedListeners = new Set<RemovedListener>();

/** Registers what must forget an entry's JWKS URL when the entry is removed (the server's key-set cache). */
export function onProviderRemoved(listener: RemovedListener): void {
  removedListeners.add(listener);
}

/** Tells the listeners that an entry with this JWKS URL was removed (after its transaction committed). */
export function providerRemoved(jwksUrl: string): void {
  for (const listener of removedListeners) listener(jwksUrl);
}
