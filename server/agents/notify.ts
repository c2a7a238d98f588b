import { type AuditRequest, recordProviderRevocations } from "../audit/record.ts";
import { AGENT_PATHS } from "./metadata.ts";
import { MAX_OAUTH_BODY_BYTES } from "./oauth.ts";
import { type AgentClient, type AgentServices, agentErrorShape, agentRoutes } from "./plugin.ts";
import { CLOCK_SKEW_SECONDS, consumeJti, ProviderJwtError, verifyProviderJwt } from "./provider-keys.ts";

export const NOTIFY_PATH = "/agent/event/notify";
export const ASSERTION_REVOKED_EVENT =
  "https://schemas.workos.com/events/agent/auth/identity/assertion/revoked";
const MEDIA_TYPES = ["application/secevent+jwt", "application/logout+jwt"];
const TYPS = ["secevent+jwt", "logout+jwt"];
/** A SET without exp is accepted this long after its iat (and its jti remembered as long). */
const MAX_SET_AGE_SECONDS = 3600;

/** RFC 8935 §2.3 error codes. */
type SetErrorCode =
  | "invalid_request"
  | "invalid_key"
  | "invalid_issuer"
  | "invalid_audience"
  | "authentication_failed";

class SetError extends Error {
  constructor(
    readonly code: SetErrorCode,
    description: string,
  ) {
    super(description);
  }
}

const FAILURES: Record<ProviderJwtError["failure"], SetErrorCode> = {
  malformed: "invalid_request",
  typ: "invalid_request",
  claims: "invalid_request",
  expired: "invalid_request",
  unknown_issuer: "invalid_issuer",
  signature: "invalid_key",
  audience: "invalid_audience",
};

/** RFC 8935 §2.3's error body, `{err, description}`, never cached. */
const setErrorJson = (
  code: string,
  description: string,
  status = 400,
  headers: Record<string, string> = {},
) =>
  Response.json({ err: code, description }, { status, headers: { ...headers, "Cache-Control": "no-store" } });

const setError = (error: SetError) => setErrorJson(error.code, error.message);

// Errors raised before the handler (the per-address rate limit's 429 with its Retry-After, a 413) in the same shape.
agentErrorShape(NOTIFY_PATH, (error) => setErrorJson(error.code, error.message, error.status, error.headers));

/** The subject a revocation names: the SET's `sub`, or the event's own (`sub`, or an iss_sub subject identifier). */
function subjectOf(
  payload: Record<string, unknown>,
  event: Record<string, unknown>,
  issuer: string,
): string | undefined {
  if (typeof payload.sub === "string" && payload.sub !== "") return payload.sub;
  if (typeof event.sub === "string" && event.sub !== "") return event.sub;
  const subject = event.subject as Record<string, unknown> | undefined;
  if (subject && typeof subject.sub === "string" && (subject.iss === undefined || subject.iss === issuer))
    return subject.sub;
  return undefined;
}

/**
 * RFC 8935 push delivery of Security Event Tokens from a trusted ID-JAG provider: the
 * assertion-revoked event revokes every registration of that `(iss, sub)` and all their tokens.
 * Answers 202 with no body, or 400 `{err, description}`.
 */
async function notify(
  request: Request,
  services: AgentServices,
  _url: URL,
  client: AgentClient,
): Promise<Response> {
  try {
    const mediaType = (request.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (!MEDIA_TYPES.includes(mediaType))
      throw new SetError("invalid_request", `Send the SET with Content-Type ${MEDIA_TYPES.join(" or ")}.`);
    const text = (await request.text()).trim();
    if (Buffer.byteLength(text) > MAX_OAUTH_BODY_BYTES)
      throw new SetError("invalid_request", `The body exceeds ${MAX_OAUTH_BODY_BYTES} bytes.`);
    if (text === "") throw new SetError("invalid_request", "The body must be the SET (a signed JWT).");

    let verified;
    try {
      verified = await verifyProviderJwt(text, {
        prisma: services.prisma,
        production: services.config.env === "production",
        audiences: [services.hostUrl, services.baseUrl],
        typs: TYPS,
        requiredClaims: ["iat", "jti"],
      });
    } catch (error) {
      if (!(error instanceof ProviderJwtError)) throw error;
      throw new SetError(FAILURES[error.failure], `The SET was refused: ${error.message}`);
    }
    const { payload, issuer, providers } = verified;
    const iat = payload.iat as number;
    const now = Date.now() / 1000;
    if (payload.exp === undefined && now - iat > MAX_SET_AGE_SECONDS + CLOCK_SKEW_SECONDS) {
      throw new SetError(
        "invalid_request",
        `The SET was issued more than ${MAX_SET_AGE_SECONDS} seconds ago.`,
      );
    }
    const events = payload.events;
    if (typeof events !== "object" || events === null || Array.isArray(events))
      throw new SetError("invalid_request", "The SET has no events claim.");
    const event = (events as Record<string, unknown>)[ASSERTION_REVOKED_EVENT];
    if (typeof event !== "object" || event === null) {
      throw new SetError(
        "invalid_request",
        `The SET carries no event Kontor handles; supported: ${ASSERTION_REVOKED_EVENT}.`,
      );
    }
    const subject = subjectOf(payload, event as Record<string, unknown>, issuer);
    if (!subject) throw new SetError("invalid_request", "The SET names no subject (sub).");
    if (typeof payload.jti !== "string" || payload.jti === "" || payload.jti.length > 255)
      throw new SetError("invalid_request", "The SET's jti must be a string.");

    const until = typeof payload.exp === "number" ? payload.exp : iat + MAX_SET_AGE_SECONDS;
    if (
      !(await consumeJti(services.prisma, issuer, payload.jti, new Date((until + CLOCK_SKEW_SECONDS) * 1000)))
    ) {
      throw new SetError("invalid_request", "This SET's jti was already received.");
    }
    await revokeSubject(
      services,
      issuer,
      subject,
      providers.map((p) => p.workspaceId),
      client.state,
    );
    return new Response(null, { status: 202 });
  } catch (error) {
    if (error instanceof SetError) return setError(error);
    throw error;
  }
}

/**
 * Revokes the live registrations of `(issuer, subject)` and their tokens, in one transaction: only
 * those in the workspaces whose entry for the issuer verified the SET (another workspace naming the
 * same issuer with other keys cannot revoke them). Every identity_assertion registration carries
 * its workspace from the start, so none is left that an arbitrary workspace's keys could reach.
 */
async function revokeSubject(
  services: AgentServices,
  issuer: string,
  subject: string,
  workspaceIds: string[],
  request: AuditRequest,
) {
  const now = new Date();
  const revoked = await services.prisma.$transaction(async (tx) => {
    const registrations = await tx.agentRegistration.findMany({
      where: {
        type: "identity_assertion",
        providerIssuer: issuer,
        providerSubject: subject,
        revokedAt: null,
        workspaceId: { in: workspaceIds },
      },
      select: { id: true, workspaceId: true },
    });
    const ids = registrations.map((r) => r.id);
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
    await recordProviderRevocations(tx, issuer, registrations, request);
    return ids;
  });
  await services.revocations.revoked("agent_registration", revoked);
}

agentRoutes({ [NOTIFY_PATH]: { POST: notify }, [AGENT_PATHS.revokeAlias]: { POST: notify } });
