import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { hash, verify } from "@node-rs/argon2";
import type { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import type { PrismaClient } from "../schema/generated/prisma/client.ts";
import type { Config } from "./config.ts";

/** The signed-in user's cookie: a random token whose SHA-256 is the Session row's id. */
export const SESSION_COOKIE = "kontor_session";
/** Before sign-in there is no session: the sign-in form's CSRF token is doubled in this cookie. */
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
  return timingSafeEqual(createHash("sha256").update(expected).digest(), createHash("sha256").update(given).digest());
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

/** HttpOnly, SameSite=Lax, Path=/; Secure everywhere but development (which runs on plain http). */
export function cookieHeader(config: Config, name: string, value: string, maxAgeSeconds: number): string {
  return [`${name}=${value}`, "Path=/", "HttpOnly", "SameSite=Lax", `Max-Age=${maxAgeSeconds}`, ...(config.env === "development" ? [] : ["Secure"])].join("; ");
}

export interface SignedInSession {
  /** SHA-256 of the cookie token. */
  id: string;
  userId: string;
  email: string;
  csrfToken: string;
  expiresAt: Date;
}

export async function createSession(db: PrismaClient, userId: string): Promise<{ token: string; session: SignedInSession }> {
  const token = randomToken();
  const now = Date.now();
  const row = await db.$transaction(async (tx) => {
    await tx.session.deleteMany({ where: { userId, expiresAt: { lte: new Date(now) } } });
    return tx.session.create({
      data: { id: sha256(token), userId, csrfToken: randomToken(), expiresAt: new Date(now + SESSION_TTL_SECONDS * 1000) },
      include: { user: { select: { email: true } } },
    });
  });
  return { token, session: { id: row.id, userId, email: row.user.email, csrfToken: row.csrfToken, expiresAt: row.expiresAt } };
}

/** The live session the request's cookie names, or null (no cookie, unknown, or expired). */
export async function findSession(db: PrismaClient, request: Request): Promise<SignedInSession | null> {
  const token = readCookies(request).get(SESSION_COOKIE);
  if (!token || token.length > 100) return null;
  const row = await db.session.findUnique({ where: { id: sha256(token) }, include: { user: { select: { email: true } } } });
  if (!row || row.expiresAt.getTime() <= Date.now()) return null;
  return { id: row.id, userId: row.userId, email: row.user.email, csrfToken: row.csrfToken, expiresAt: row.expiresAt };
}

export async function endSession(db: PrismaClient, session: SignedInSession): Promise<void> {
  await db.session.deleteMany({ where: { id: session.id } });
}

/** Sets a new password and ends every other session of the user (this one stays). */
export async function changePassword(db: PrismaClient, session: SignedInSession, password: string): Promise<void> {
  const passwordHash = await hash(password);
  await db.$transaction([
    db.user.update({ where: { id: session.userId }, data: { passwordHash } }),
    db.session.deleteMany({ where: { userId: session.userId, id: { not: session.id } } }),
  ]);
}

/** The pre-session CSRF token of the request's cookie, or a new one (then `setCookie` must be sent). */
export function preSessionCsrf(config: Config, request: Request): { token: string; setCookie?: string } {
  const existing = readCookies(request).get(PRE_SESSION_COOKIE);
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
    /** The deployment's Redis key prefix (server/redis.ts). */
    redisNamespace: string,
  ) {
    this.perAccount = limiter(redis, redisNamespace, "signin:account", SIGN_IN_FAILURES_PER_ACCOUNT, SIGN_IN_WINDOW_SECONDS);
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
    const user = await this.db.user.findUnique({ where: { email }, select: { id: true, passwordHash: true } });
    decoy ??= hash(randomToken());
    const ok = await verify(user?.passwordHash ?? (await decoy), input.password).catch(() => false);
    if (!user || !ok) return { outcome: "wrong" };
    await Promise.all([this.perAccount.delete(accountKey), this.perIp.reward(input.ip)]);
    return { outcome: "signed_in", userId: user.id };
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

function limiter(redis: Redis | undefined, namespace: string, kind: string, points: number, duration: number): RateLimiterAbstract {
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
