import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Redis } from "ioredis";
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from "rate-limiter-flexible";
import type { Prisma, PrismaClient } from "../../schema/generated/prisma/client.ts";
import type { Config } from "../runtime/config.ts";
import { hashPassword, needsRehash, verifyPassword } from "./passwords.ts";

/**
 * The signed-in user's cookie: a random token whose SHA-256 is the Session row's id. This is its
 * base name: on the wire it is `cookieName(config, SESSION_COOKIE)`.
 */
export const SESSION_COOKIE = "kontor_session";
/** Before sign-in there is no session: the sign-in form's CSRF token is doubled in this cookie (base name, as above). */
export const PRE_SESSION_COOKIE = "kontor_csrf";
export const SESSION_TTL_SECONDS = 12 * 60 * 60;

/** Failed sign-ins allowed per account and per client IP within SIGN_IN_WINDOW_SECONDS. */
export const SIGN_IN_FAILURES_PER_ACCOUNT = 5;
export const SIGN_IN_FAILURES_PER_IP = 20;
export const SIGN_IN_WINDOW_SECONDS = 15 * 60;
/** Accounts one client IP may create within SIGN_UP_WINDOW_SECONDS. */
export const SIGN_UPS_PER_IP = 10;
export const SIGN_UP_WINDOW_SECONDS = 60 * 60;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const randomToken = () => randomBytes(32).toString("base64url");

/** Constant-time comparison of two secrets of any length. */
export function sameSecret(expected: string, given: string | undefined): boolean {
  if (!given) return false;
  return timingSafeEqual(
    createHash("sha256").update(expected).digest(),
    createHash("sha256").update(given).digest(),
  );
}

export function readCookies(request: Request): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (!cookies.has(name)) cookies.set(name, part.slice(eq + 1).trim());
  }
  return cookies;
}

/** Cookies are Secure everywhere but development (which runs on plain http). */
const secureCookies = (config: Pick<Config, "env">) => config.env !== "development";

/**
 * A cookie's name on this deployment: `__Host-<base>` whenever it is Secure, so that only this
 * exact host can set it (Secure, Path=/, no Domain: no subdomain or plain-http page can plant one);
 * the bare base name in development.
 */
export const cookieName = (config: Pick<Config, "env">, base: string) =>
  secureCookies(config) ? `__Host-${base}` : base;

/** The value of the cookie `base` (named as `cookieName` says) the request carries. */
export const readCookie = (config: Pick<Config, "env">, request: Request, base: string) =>
  readCookies(request).get(cookieName(config, base));

/** Sets the cookie `base` (named as `cookieName` says): HttpOnly, SameSite=Lax, Path=/, no Domain; Secure outside development. */
export function cookieHeader(
  config: Pick<Config, "env">,
  base: string,
  value: string,
  maxAgeSeconds: number,
): string {
  return [
    `${cookieName(config, base)}=${value}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Lax",
    `Max-Age=${maxAgeSeconds}`,
    ...(secureCookies(config) ? ["Secure"] : []),
  ].join("; ");
}

export interface SignedInSession {
  /** SHA-256 of the cookie token. */
  id: string;
  userId: string;
  email: string;
  csrfToken: string;
  expiresAt: Date;
}

/** What runs in the transaction of a session change, with the user it is about (the audit record of it). */
export type InSessionTransaction = (
  tx: Prisma.TransactionClient,
  user: { id: string; email: string },
) => Promise<void>;

export async function createSession(
  db: PrismaClient,
  userId: string,
  then?: InSessionTransaction,
): Promise<{ token: string; session: SignedInSession }> {
  const token = randomToken();
  const now = Date.now();
  const row = await db.$transaction(async (tx) => {
    await tx.session.deleteMany({ where: { userId, expiresAt: { lte: new Date(now) } } });
    const created = await tx.session.create({
      data: {
        id: sha256(token),
        userId,
        csrfToken: randomToken(),
        expiresAt: new Date(now + SESSION_TTL_SECONDS * 1000),
      },
      include: { user: { select: { email: true } } },
    });
    await then?.(tx, { id: userId, email: created.user.email });
    return created;
  });
  return {
    token,
    session: {
      id: row.id,
      userId,
      email: row.user.email,
      csrfToken: row.csrfToken,
      expiresAt: row.expiresAt,
    },
  };
}

/** The live session the request's cookie names, or null (no cookie, unknown, or expired). */
export async function findSession(
  db: PrismaClient,
  config: Pick<Config, "env">,
  request: Request,
): Promise<SignedInSession | null> {
  const token = readCookie(config, request, SESSION_COOKIE);
  if (!token || token.length > 100) return null;
  const row = await db.session.findUnique({
    where: { id: sha256(token) },
    include: { user: { select: { email: true } } },
  });
  if (!row || row.expiresAt.getTime() <= Date.now()) return null;
  return {
    id: row.id,
    userId: row.userId,
    email: row.user.email,
    csrfToken: row.csrfToken,
    expiresAt: row.expiresAt,
  };
}

/** Ends the session; `then` runs in the same transaction when it was still there. */
export async function endSession(
  db: PrismaClient,
  session: SignedInSession,
  then?: InSessionTransaction,
): Promise<void> {
  await db.$transaction(async (tx) => {
    const { count } = await tx.session.deleteMany({ where: { id: session.id } });
    if (count > 0) await then?.(tx, { id: session.userId, email: session.email });
  });
}

/** Sets a new password and ends every other session of the user (this one stays); `then` runs in the same transaction. */
export async function changePassword(
  db: PrismaClient,
  session: SignedInSession,
  password: string,
  then?: InSessionTransaction,
): Promise<void> {
  const passwordHash = await hashPassword(password);
  await db.$transaction(async (tx) => {
    await tx.user.update({ where: { id: session.userId }, data: { passwordHash } });
    await tx.session.deleteMany({ where: { userId: session.userId, id: { not: session.id } } });
    await then?.(tx, { id: session.userId, email: session.email });
  });
}

/** The pre-session CSRF token of the request's cookie, or a new one (then `setCookie` must be sent). */
export function preSessionCsrf(config: Config, request: Request): { token: string; setCookie?: string } {
  const existing = readCookie(config, request, PRE_SESSION_COOKIE);
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { token: existing };
  const token = randomToken();
  return { token, setCookie: cookieHeader(config, PRE_SESSION_COOKIE, token, SESSION_TTL_SECONDS) };
}

export type SignInResult =
  | { outcome: "signed_in"; userId: string }
  /** A wrong password and an unknown e-mail are the same answer. */
  | { outcome: "wrong" }
  | { outcome: "wait"; retryAfterSeconds: number };

/** A hash to verify against when the e-mail is unknown, so both failures take as long. */
let decoy: Promise<string> | undefined;

/**
 * E-mail and password sign-in, rate limited per account and per client IP. Every attempt takes a
 * point from both before the password is checked (so parallel guesses cannot outrun the count);
 * a success gives them back.
 */
export class SignIn {
  private readonly perAccount: RateLimiterAbstract;
  private readonly perIp: RateLimiterAbstract;

  constructor(
    private readonly db: PrismaClient,
    redis: Redis | undefined,
    /** The deployment's Redis key prefix (server/runtime/redis.ts). */
    redisNamespace: string,
  ) {
    this.perAccount = limiter(
      redis,
      redisNamespace,
      "signin:account",
      SIGN_IN_FAILURES_PER_ACCOUNT,
      SIGN_IN_WINDOW_SECONDS,
    );
    this.perIp = limiter(redis, redisNamespace, "signin:ip", SIGN_IN_FAILURES_PER_IP, SIGN_IN_WINDOW_SECONDS);
  }

  async attempt(input: { email: string; password: string; ip: string }): Promise<SignInResult> {
    const email = input.email.trim().toLowerCase();
    const accountKey = sha256(email);
    for (const [limiter, key] of [
      [this.perIp, input.ip],
      [this.perAccount, accountKey],
    ] as const) {
      try {
        await limiter.consume(key);
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        return { outcome: "wait", retryAfterSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)) };
      }
    }
    const user = await this.db.user.findUnique({
      where: { email },
      select: { id: true, passwordHash: true },
    });
    decoy ??= hashPassword(randomToken());
    const ok = await verifyPassword(user?.passwordHash ?? (await decoy), input.password);
    if (!user || !ok) return { outcome: "wrong" };
    if (needsRehash(user.passwordHash)) await this.rehash(user.id, user.passwordHash, input.password);
    await Promise.all([this.perAccount.delete(accountKey), this.perIp.reward(input.ip)]);
    return { outcome: "signed_in", userId: user.id };
  }

  /** Replaces a hash made with older parameters, unless the password changed meanwhile. */
  private async rehash(userId: string, old: string, password: string): Promise<void> {
    await this.db.user.updateMany({
      where: { id: userId, passwordHash: old },
      data: { passwordHash: await hashPassword(password) },
    });
  }
}

const signIns = new WeakMap<PrismaClient, SignIn>();

/** The one SignIn of a database: the claim page and the dashboard count failures together. */
export function signInFor(db: PrismaClient, redis: Redis | undefined, redisNamespace: string): SignIn {
  let signIn = signIns.get(db);
  if (!signIn) signIns.set(db, (signIn = new SignIn(db, redis, redisNamespace)));
  return signIn;
}

/** New accounts per client IP: SIGN_UPS_PER_IP per SIGN_UP_WINDOW_SECONDS, every attempt counted. */
export class SignUpLimit {
  private readonly perIp: RateLimiterAbstract;

  constructor(redis: Redis | undefined, redisNamespace: string) {
    this.perIp = limiter(redis, redisNamespace, "signup:ip", SIGN_UPS_PER_IP, SIGN_UP_WINDOW_SECONDS);
  }

  /** Null when the attempt may go on, else the seconds to wait. */
  async take(ip: string): Promise<number | null> {
    try {
      await this.perIp.consume(ip);
      return null;
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      return Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
    }
  }
}

function limiter(
  redis: Redis | undefined,
  namespace: string,
  kind: string,
  points: number,
  duration: number,
): RateLimiterAbstract {
  const memory = new RateLimiterMemory({ points, duration });
  if (!redis) return memory;
  return new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${namespace}${kind}`,
    points,
    duration,
    insuranceLimiter: memory,
  });
}
