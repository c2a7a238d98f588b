import http from "node:http";
import https from "node:https";
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, errors, jwtVerify, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from "jose";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import type { PlanName } from "../../schema/lib/plans.ts";
import { providerUrl } from "../../schema/lib/provider-url.ts";
import { checkWebhookTarget, guardedLookup } from "../webhooks/url-policy.ts";

/** A JWKS bigger than this is refused (a provider publishes a handful of keys, a few KB). */
export const MAX_JWKS_BYTES = 64 * 1024;
const FETCH_TIMEOUT_MS = 5_000;
/** How long a fetched key set is used before it is fetched again. */
const CACHE_MS = 10 * 60_000;
/** A kid that was still unknown after a refetch is not refetched for again until this has passed. */
const UNKNOWN_KID_MS = 60_000;
interface CachedSet {
  getKey: JWTVerifyGetKey;
  kids: Set<string>;
  fetchedAt: number;
  /** kid → until when a refetch for it is not tried again. */
  missing: Map<string, number>;
}

/**
 * The key sets of trusted ID-JAG providers, fetched from their JWKS URLs and kept in memory. A
 * JWT whose kid is not in the cached set makes one refetch (a provider rotated its keys); a kid
 * still unknown after that is remembered for a minute, so garbage kids cannot make Kontor hammer
 * a provider.
 */
export class ProviderKeys {
  private readonly sets = new Map<string, CachedSet>();
  private readonly inflight = new Map<string, Promise<CachedSet>>();

  constructor(private readonly production: boolean) {}

  /** A key resolver for jose's jwtVerify over the JWKS at `jwksUrl`. */
  resolver(jwksUrl: string): JWTVerifyGetKey {
    return async (header, token) => {
      let set = await this.current(jwksUrl);
      const kid = header.kid;
      const now = Date.now();
      if (kid !== undefined && !set.kids.has(kid) && (set.missing.get(kid) ?? 0) <= now) {
        set = await this.fetch(jwksUrl);
        if (!set.kids.has(kid)) {
          if (set.missing.size > 1000) set.missing.clear();
          set.missing.set(kid, now + UNKNOWN_KID_MS);
        }
      }
      return set.getKey(header, token);
    };
  }

  private async current(jwksUrl: string): Promise<CachedSet> {
    const set = this.sets.get(jwksUrl);
    if (set && Date.now() - set.fetchedAt < CACHE_MS) return set;
    return this.fetch(jwksUrl);
  }

  /** One fetch per URL at a time: concurrent verifications share it. */
  private fetch(jwksUrl: string): Promise<CachedSet> {
    let pending = this.inflight.get(jwksUrl);
    if (!pending) {
      pending = this.download(jwksUrl).finally(() => this.inflight.delete(jwksUrl));
      this.inflight.set(jwksUrl, pending);
    }
    return pending;
  }

  private async download(jwksUrl: string): Promise<CachedSet> {
    const url = providerUrl(jwksUrl, "jwks_url", this.production);
    await checkWebhookTarget(url, { production: this.production });
    const jwks = JSON.parse(await getBounded(url, this.production)) as JSONWebKeySet;
    if (typeof jwks !== "object" || jwks === null || !Array.isArray(jwks.keys)) throw new Error(`The JWKS at ${jwksUrl} has no keys array.`);
    const previous = this.sets.get(jwksUrl);
    const set: CachedSet = {
      getKey: createLocalJWKSet(jwks),
      kids: new Set(jwks.keys.map((key) => key.kid).filter((kid): kid is string => typeof kid === "string")),
      fetchedAt: Date.now(),
      missing: previous?.missing ?? new Map(),
    };
    if (this.sets.size > 1000) this.sets.clear();
    this.sets.set(jwksUrl, set);
    return set;
  }
}

/**
 * GETs a key set with node:http: no redirect is followed, and the connection goes to the address
 * the policy checked (the webhook policy's guarded lookup), so a DNS answer that changes between
 * the check and the connection cannot point it at a private or metadata address.
 */
function getBounded(url: URL, production: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const transport = url.protocol === "https:" ? https : http;
    const request = transport.get(url, { lookup: guardedLookup({ production }), headers: { accept: "application/json" }, timeout: FETCH_TIMEOUT_MS }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        return reject(new Error(`The JWKS at ${url.href} answered ${response.statusCode}.`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_JWKS_BYTES) request.destroy(new Error(`The JWKS is larger than ${MAX_JWKS_BYTES} bytes.`));
        else chunks.push(chunk);
      });
      response.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      response.on("error", reject);
    });
    request.on("timeout", () => request.destroy(new Error(`The JWKS at ${url.href} did not answer within ${FETCH_TIMEOUT_MS} ms.`)));
    request.on("error", reject);
  });
}

const instances = new Map<boolean, ProviderKeys>();

/** The process's provider key cache (one per production mode, so tests of both modes do not share). */
export function providerKeys(production: boolean): ProviderKeys {
  let keys = instances.get(production);
  if (!keys) instances.set(production, (keys = new ProviderKeys(production)));
  return keys;
}

/** Why a provider's JWT was refused; each endpoint maps it to its own error shape. */
export type ProviderJwtFailure = "malformed" | "unknown_issuer" | "typ" | "signature" | "audience" | "expired" | "claims";

export class ProviderJwtError extends Error {
  constructor(
    readonly failure: ProviderJwtFailure,
    message: string,
  ) {
    super(message);
  }
}

/** Signature algorithms a provider may use: asymmetric only (never `none` or a shared secret). */
const ALGORITHMS = ["ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA", "Ed25519"];
/** Clock skew tolerated on `exp`, `iat` and `auth_time`. */
export const CLOCK_SKEW_SECONDS = 60;

const normalizeTyp = (typ: string) => typ.toLowerCase().replace(/^application\//, "");

export interface ProviderRow {
  id: string;
  workspaceId: string;
  issuer: string;
  jwksUrl: string;
  maxAuthAge: number | null;
  workspace: { plan: PlanName; agentAuthEnabled: boolean };
}

export interface VerifiedProviderJwt {
  payload: JWTPayload & Record<string, unknown>;
  issuer: string;
  /** The trusted-provider entries (of any workspace) for the JWT's issuer whose JWKS verified it. */
  providers: ProviderRow[];
}

/**
 * Verifies a JWT a trusted provider signed: its `iss` must be some workspace's trusted provider,
 * its header `typ` one of `typs`, its signature one of the keys at that provider's JWKS URL, its
 * `aud` `{host_url}` or `{base_url}`, and `requiredClaims` present.
 */
export async function verifyProviderJwt(
  jwt: string,
  options: { prisma: PrismaClient; production: boolean; audiences: string[]; typs: string[]; requiredClaims: string[] },
): Promise<VerifiedProviderJwt> {
  let issuer: unknown;
  let typ: unknown;
  try {
    typ = decodeProtectedHeader(jwt).typ;
    issuer = decodeJwt(jwt).iss;
  } catch {
    throw new ProviderJwtError("malformed", "The token is not a signed JWT (three base64url parts with a JSON header and claims).");
  }
  if (typeof issuer !== "string" || issuer === "") throw new ProviderJwtError("malformed", "The token has no iss claim.");
  const providers = await options.prisma.trustedProvider.findMany({
    where: { issuer },
    select: { id: true, workspaceId: true, issuer: true, jwksUrl: true, maxAuthAge: true, workspace: { select: { plan: true, agentAuthEnabled: true } } },
  });
  if (providers.length === 0) throw new ProviderJwtError("unknown_issuer", `No workspace trusts the issuer '${issuer.slice(0, 200)}'.`);
  if (typeof typ !== "string" || !options.typs.includes(normalizeTyp(typ))) {
    throw new ProviderJwtError("typ", `The JWT header typ must be ${options.typs.map((t) => `'${t}'`).join(" or ")}.`);
  }
  const keys = providerKeys(options.production);
  let failure: ProviderJwtError | undefined;
  let payload: JWTPayload | undefined;
  const verifiedUrls = new Set<string>();
  // Workspaces may give the same issuer different JWKS URLs: only the entries whose keys verify count.
  for (const jwksUrl of new Set(providers.map((p) => p.jwksUrl))) {
    try {
      ({ payload } = await jwtVerify(jwt, keys.resolver(jwksUrl), {
        algorithms: ALGORITHMS,
        issuer,
        audience: options.audiences,
        requiredClaims: options.requiredClaims,
        clockTolerance: CLOCK_SKEW_SECONDS,
      }));
      verifiedUrls.add(jwksUrl);
    } catch (error) {
      failure = classify(error);
      // A claim failure means the signature was good: another JWKS URL would not change it.
      if (failure.failure !== "signature") throw failure;
    }
  }
  if (!payload) throw failure!;
  if (typeof payload.iat === "number" && payload.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) {
    throw new ProviderJwtError("claims", "The token's iat is in the future.");
  }
  return { payload: payload as VerifiedProviderJwt["payload"], issuer, providers: providers.filter((p) => verifiedUrls.has(p.jwksUrl)) };
}

function classify(error: unknown): ProviderJwtError {
  if (error instanceof ProviderJwtError) return error;
  if (error instanceof errors.JWTExpired) return new ProviderJwtError("expired", "The token has expired.");
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "aud") return new ProviderJwtError("audience", "The token's aud is not this server ({host_url} or {base_url}).");
    return new ProviderJwtError("claims", `The token's ${error.claim} claim is missing or invalid.`);
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return new ProviderJwtError("malformed", "The token is not a well-formed signed JWT.");
  }
  if (error instanceof errors.JWKSNoMatchingKey) return new ProviderJwtError("signature", "No key of the provider's JWKS matches the token's kid and alg.");
  if (error instanceof errors.JOSEAlgNotAllowed) return new ProviderJwtError("signature", "The token's alg is not accepted (use an asymmetric algorithm such as ES256).");
  if (error instanceof errors.JWSSignatureVerificationFailed) return new ProviderJwtError("signature", "The token's signature does not verify against the provider's JWKS.");
  return new ProviderJwtError("signature", "The provider's keys could not be fetched or used to check the signature.");
}

/**
 * Records a provider JWT's `jti` as used until `expiresAt`; false when it was already used (on
 * any process: the database's primary key decides).
 */
export async function consumeJti(prisma: PrismaClient, issuer: string, jti: string, expiresAt: Date): Promise<boolean> {
  await prisma.usedJti.deleteMany({ where: { expiresAt: { lt: new Date() } } });
  const { count } = await prisma.usedJti.createMany({ data: [{ issuer, jti, expiresAt }], skipDuplicates: true });
  return count === 1;
}
