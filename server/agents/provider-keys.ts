import http from "node:http";
import https from "node:https";
import {
  createLocalJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from "jose";
import type { PrismaClient } from "../../schema/generated/prisma/client.ts";
import type { PlanName } from "../../schema/lib/plans.ts";
import { onProviderRemoved } from "../../schema/lib/provider-trust.ts";
import { providerUrl } from "../../schema/lib/provider-url.ts";
import { checkWebhookTarget, guardedLookup } from "../webhooks/url-policy.ts";

/** A JWKS bigger than this is refused (a provider publishes a handful of keys, a few KB). */
export const MAX_JWKS_BYTES = 64 * 1024;
const FETCH_TIMEOUT_MS = 5_000;
/** How long a fetched key set is used before it is fetched again. */
const CACHE_MS = 10 * 60_000;
/** A key set that failed to load is not fetched again for this long (negative caching per JWKS URL). */
export const FAILED_FETCH_MS = 60_000;
/** An unknown kid makes at most one refetch of a key set in this long. */
export const KID_REFETCH_MS = 60_000;
/** Past this many URLs a cache map starts over (entries are cheap to rebuild). */
const MAX_ENTRIES = 1000;

interface CachedSet {
  getKey: JWTVerifyGetKey;
  kids: Set<string>;
  fetchedAt: number;
  /** When an unknown kid last made this set be fetched again (-Infinity: never). */
  kidRefetchAt: number;
}

/** A key set that could not be loaded: refused without fetching until `until`. */
interface FailedFetch {
  error: Error;
  until: number;
}

/** What a ProviderKeys cache may be given: a clock (epoch ms), injectable for tests. */
export interface ProviderKeysOptions {
  now?: () => number;
}

/**
 * The key sets of trusted ID-JAG providers, fetched from their JWKS URLs and kept in memory for 10
 * minutes. Nothing lets a JWT make Kontor hammer a provider: a key set that fails to load (an
 * error status, a timeout, garbage) is refused for a minute without being fetched again, and JWTs
 * naming kids the cached set does not hold make at most one refetch of it a minute (the first
 * picks up a provider's rotated-in key; the others are checked against the set as it is).
 */
export class ProviderKeys {
  private readonly sets = new Map<string, CachedSet>();
  private readonly failures = new Map<string, FailedFetch>();
  private readonly inflight = new Map<string, Promise<CachedSet>>();
  private readonly now: () => number;

  constructor(
    private readonly production: boolean,
    options: ProviderKeysOptions = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  /** A key resolver for jose's jwtVerify over the JWKS at `jwksUrl`. */
  resolver(jwksUrl: string): JWTVerifyGetKey {
    return async (header, token) => {
      let set = await this.current(jwksUrl);
      const kid = header.kid;
      if (kid !== undefined && !set.kids.has(kid)) {
        const inflight = this.inflight.get(jwksUrl);
        if (inflight) set = await inflight.catch(() => set);
        else if (this.now() - set.kidRefetchAt >= KID_REFETCH_MS && !this.failing(jwksUrl)) {
          set.kidRefetchAt = this.now();
          // A failed refetch keeps the set already held (and is itself not retried for a minute).
          set = await this.fetch(jwksUrl).catch(() => set);
        }
      }
      return set.getKey(header, token);
    };
  }

  /** Drops what is cached for `jwksUrl` (its workspace entry was removed): the next use fetches it afresh. */
  forget(jwksUrl: string): void {
    this.sets.delete(jwksUrl);
    this.failures.delete(jwksUrl);
  }

  private failing(jwksUrl: string): FailedFetch | undefined {
    const failed = this.failures.get(jwksUrl);
    if (failed && failed.until > this.now()) return failed;
    return undefined;
  }

  private async current(jwksUrl: string): Promise<CachedSet> {
    const set = this.sets.get(jwksUrl);
    if (set && this.now() - set.fetchedAt < CACHE_MS) return set;
    const failed = this.failing(jwksUrl);
    if (failed) throw failed.error;
    return this.fetch(jwksUrl);
  }

  /** One fetch per URL at a time: concurrent verifications share it, and its failure is remembered. */
  private fetch(jwksUrl: string): Promise<CachedSet> {
    let pending = this.inflight.get(jwksUrl);
    if (!pending) {
      pending = this.download(jwksUrl)
        .then(
          (set) => {
            this.failures.delete(jwksUrl);
            return set;
          },
          (error: unknown) => {
            if (this.failures.size >= MAX_ENTRIES) this.failures.clear();
            const failure = error instanceof Error ? error : new Error(String(error));
            this.failures.set(jwksUrl, { error: failure, until: this.now() + FAILED_FETCH_MS });
            throw failure;
          },
        )
        .finally(() => this.inflight.delete(jwksUrl));
      this.inflight.set(jwksUrl, pending);
    }
    return pending;
  }

  private async download(jwksUrl: string): Promise<CachedSet> {
    const url = providerUrl(jwksUrl, "jwks_url", this.production);
    await checkWebhookTarget(url, { production: this.production });
    const jwks = JSON.parse(await getBounded(url, this.production)) as JSONWebKeySet;
    if (typeof jwks !== "object" || jwks === null || !Array.isArray(jwks.keys))
      throw new Error(`The JWKS at ${jwksUrl} has no keys array.`);
    const previous = this.sets.get(jwksUrl);
    const set: CachedSet = {
      getKey: createLocalJWKSet(jwks),
      kids: new Set(jwks.keys.map((key) => key.kid).filter((kid): kid is string => typeof kid === "string")),
      fetchedAt: this.now(),
      kidRefetchAt: previous?.kidRefetchAt ?? Number.NEGATIVE_INFINITY,
    };
    if (this.sets.size >= MAX_ENTRIES) this.sets.clear();
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
    const request = transport.get(
      url,
      {
        lookup: guardedLookup({ production }),
        headers: { accept: "application/json" },
        timeout: FETCH_TIMEOUT_MS,
      },
      (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          return reject(new Error(`The JWKS at ${url.href} answered ${response.statusCode}.`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_JWKS_BYTES)
            request.destroy(new Error(`The JWKS is larger than ${MAX_JWKS_BYTES} bytes.`));
          else chunks.push(chunk);
        });
        response.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
        response.on("error", reject);
      },
    );
    request.on("timeout", () =>
      request.destroy(new Error(`The JWKS at ${url.href} did not answer within ${FETCH_TIMEOUT_MS} ms.`)),
    );
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

// A workspace that stops trusting a provider entry drops its cached key set (or remembered failure).
onProviderRemoved((jwksUrl) => {
  for (const keys of instances.values()) keys.forget(jwksUrl);
});

/** Why a provider's JWT was refused; each endpoint maps it to its own error shape. */
export type ProviderJwtFailure =
  | "malformed"
  | "unknown_issuer"
  | "typ"
  | "signature"
  | "audience"
  | "expired"
  | "claims";

export class ProviderJwtError extends Error {
  constructor(
    readonly failure: ProviderJwtFailure,
    message: string,
  ) {
    super(message);
  }
}

/** Signature algorithms a provider may use: asymmetric only (never `none` or a shared secret). */
const ALGORITHMS = [
  "ES256",
  "ES384",
  "ES512",
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "EdDSA",
  "Ed25519",
];
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
  /** The trusted-provider entries (of any workspace) for the JWT's issuer whose JWKS verified it, oldest first. */
  providers: ProviderRow[];
}

/**
 * Verifies a JWT a trusted provider signed: its `iss` must be some workspace's trusted provider,
 * its header `typ` one of `typs`, its signature one of the keys at that provider's JWKS URL, its
 * `aud` `{host_url}` or `{base_url}`, and `requiredClaims` present. Several workspaces may trust
 * the same issuer with keys of their own: the answer names only the entries (oldest first) whose
 * key set verified the JWT, and the JWT may act only in their workspaces.
 */
export async function verifyProviderJwt(
  jwt: string,
  options: {
    prisma: PrismaClient;
    production: boolean;
    audiences: string[];
    typs: string[];
    requiredClaims: string[];
  },
): Promise<VerifiedProviderJwt> {
  let issuer: unknown;
  let typ: unknown;
  try {
    typ = decodeProtectedHeader(jwt).typ;
    issuer = decodeJwt(jwt).iss;
  } catch {
    throw new ProviderJwtError(
      "malformed",
      "The token is not a signed JWT (three base64url parts with a JSON header and claims).",
    );
  }
  if (typeof issuer !== "string" || issuer === "")
    throw new ProviderJwtError("malformed", "The token has no iss claim.");
  const providers = await options.prisma.trustedProvider.findMany({
    where: { issuer },
    select: {
      id: true,
      workspaceId: true,
      issuer: true,
      jwksUrl: true,
      maxAuthAge: true,
      workspace: { select: { plan: true, agentAuthEnabled: true } },
    },
    orderBy: [{ createdAt: "asc" }, { id: "asc" }],
  });
  if (providers.length === 0)
    throw new ProviderJwtError("unknown_issuer", `No workspace trusts the issuer '${issuer.slice(0, 200)}'.`);
  if (typeof typ !== "string" || !options.typs.includes(normalizeTyp(typ))) {
    throw new ProviderJwtError(
      "typ",
      `The JWT header typ must be ${options.typs.map((t) => `'${t}'`).join(" or ")}.`,
    );
  }
  const keys = providerKeys(options.production);
  // Trust is per entry: each JWKS URL given for the issuer is tried (at once, so one slow or failing
  // entry does not hold up the others), and only the entries whose keys verify the JWT count.
  const results = await Promise.all(
    [...new Set(providers.map((p) => p.jwksUrl))].map(async (jwksUrl) => {
      try {
        const { payload } = await jwtVerify(jwt, keys.resolver(jwksUrl), {
          algorithms: ALGORITHMS,
          issuer,
          audience: options.audiences,
          requiredClaims: options.requiredClaims,
          clockTolerance: CLOCK_SKEW_SECONDS,
        });
        return { jwksUrl, payload };
      } catch (error) {
        return { jwksUrl, failure: classify(error) };
      }
    }),
  );
  // A claim failure means the signature was good (or the token is malformed): no entry would accept it.
  const refusal = results.find((r) => r.failure && r.failure.failure !== "signature")?.failure;
  if (refusal) throw refusal;
  const verified = results.filter((r) => r.payload !== undefined);
  const payload = verified[0]?.payload;
  if (!payload) throw results[0]!.failure!;
  const verifiedUrls = new Set(verified.map((r) => r.jwksUrl));
  if (typeof payload.iat === "number" && payload.iat > Date.now() / 1000 + CLOCK_SKEW_SECONDS) {
    throw new ProviderJwtError("claims", "The token's iat is in the future.");
  }
  return {
    payload: payload as VerifiedProviderJwt["payload"],
    issuer,
    providers: providers.filter((p) => verifiedUrls.has(p.jwksUrl)),
  };
}

function classify(error: unknown): ProviderJwtError {
  if (error instanceof ProviderJwtError) return error;
  if (error instanceof errors.JWTExpired) return new ProviderJwtError("expired", "The token has expired.");
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "aud")
      return new ProviderJwtError(
        "audience",
        "The token's aud is not this server ({host_url} or {base_url}).",
      );
    return new ProviderJwtError("claims", `The token's ${error.claim} claim is missing or invalid.`);
  }
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) {
    return new ProviderJwtError("malformed", "The token is not a well-formed signed JWT.");
  }
  if (error instanceof errors.JWKSNoMatchingKey)
    return new ProviderJwtError(
      "signature",
      "No key of the provider's JWKS matches the token's kid and alg.",
    );
  if (error instanceof errors.JOSEAlgNotAllowed)
    return new ProviderJwtError(
      "signature",
      "The token's alg is not accepted (use an asymmetric algorithm such as ES256).",
    );
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return new ProviderJwtError(
      "signature",
      "The token's signature does not verify against the provider's JWKS.",
    );
  return new ProviderJwtError(
    "signature",
    "The provider's keys could not be fetched or used to check the signature.",
  );
}

/**
 * Records a provider JWT's `jti` as used until `expiresAt`; false when it was already used (on
 * any process: the database's primary key decides).
 */
export async function consumeJti(
  prisma: PrismaClient,
  issuer: string,
  jti: string,
  expiresAt: Date,
): Promise<boolean> {
  await prisma.usedJti.deleteMany({ where: { expiresAt: { lt: new Date() } } });
  const { count } = await prisma.usedJti.createMany({
    data: [{ issuer, jti, expiresAt }],
    skipDuplicates: true,
  });
  return count === 1;
}
