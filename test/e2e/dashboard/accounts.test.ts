import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { PrismaClient } from "../../../schema/generated/prisma/client.ts";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { SIGN_IN_FAILURES_PER_ACCOUNT, SIGN_UPS_PER_IP } from "../../../server/auth/sessions.ts";
import { MAX_ACCOUNT_BODY_BYTES } from "../../../server/dashboard/accounts.ts";
import { DashboardClient, type JsonAnswer, PASSWORD } from "../../support/dashboard-session.ts";
import { e2e } from "../../support/suite.ts";

const unique = (label: string) => `${label}-${randomBytes(4).toString("hex")}@example.com`;

/** A user and their own workspace, written straight into the database (sign-ups are limited per IP). */
async function existingUser(db: PrismaClient, email = unique("user"), name = "Existing Co") {
  const created = await createWorkspace(db, {
    name,
    plan: "pro",
    ownerEmail: email,
    ownerPassword: PASSWORD,
  });
  return { email, userId: created.owner_id, workspaceId: created.workspace_id };
}

/** The error shape of the account API, and the headers every answer carries. */
function expectError(answer: JsonAnswer, status: number, type: string, code: string, param?: string) {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.json.error).toMatchObject({
    type,
    code,
    message: expect.any(String),
    ...(param !== undefined && { param }),
  });
  expect(answer.json.error.request_id).toBe(answer.headers.get("x-request-id"));
  expect(answer.headers.get("cache-control")).toBe("no-store");
}

const cookieLine = (answer: JsonAnswer, name: string) =>
  answer.headers.getSetCookie().find((line) => line.startsWith(`${name}=`));

e2e("dashboard accounts", (server) => {
  const db = () => server().running.db.prisma;
  const client = () => new DashboardClient(server().url);
  const userCount = () => db().user.count();

  describe("the session", () => {
    it("signed out: no user, a pre-session CSRF token in a cookie, never cached, never 401", async () => {
      const visitor = client();
      const first = await visitor.session();
      expect(first.status).toBe(200);
      expect(first.json).toEqual({
        user: null,
        csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        expires_at: null,
        workspaces: [],
      });
      expect(first.headers.get("cache-control")).toBe("no-store");
      expect(first.headers.get("x-request-id")).toMatch(/^req_/);
      expect(first.headers.get("content-type")).toMatch(/^application\/json/);
      const cookie = cookieLine(first, "kontor_csrf")!;
      expect(cookie).toContain(`kontor_csrf=${first.json.csrf_token}`);
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Lax/);
      const again = await visitor.session();
      expect(again.json.csrf_token).toBe(first.json.csrf_token);
      expect(again.headers.getSetCookie()).toEqual([]);
    });

    it("answers other paths under /dashboard/api with 404 and wrong methods with 405, in the error shape", async () => {
      const visitor = client();
      expectError(await visitor.api("GET", "/nope"), 404, "invalid_request_error", "not_found");
      expectError(await visitor.api("GET", ""), 404, "invalid_request_error", "not_found");
      expectError(await visitor.api("POST", "/session/extra"), 404, "invalid_request_error", "not_found");
      const wrong = await visitor.api("GET", "/sign-in");
      expectError(wrong, 405, "invalid_request_error", "method_not_allowed");
      expect(wrong.headers.get("allow")).toBe("POST");
      expectError(
        await visitor.api("DELETE", "/session"),
        405,
        "invalid_request_error",
        "method_not_allowed",
      );
    });
  });

  describe("sign-up", () => {
    it("creates the user and a free workspace they own, signs them in, and stores only a hash of the password", async () => {
      const visitor = client();
      const pre = (await visitor.session()).json.csrf_token;
      const email = unique("Ada.Lovelace");
      const answer = await visitor.signUp({ email: `  ${email.toUpperCase()} `, password: PASSWORD });
      expect(answer.status, answer.text).toBe(201);
      expect(answer.headers.get("cache-control")).toBe("no-store");
      expect(answer.json).toEqual({
        user: {
          id: expect.stringMatching(/^usr_/),
          email: email.toLowerCase(),
          created_at: expect.any(String),
        },
        csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        expires_at: expect.any(String),
        workspaces: [
          {
            id: expect.stringMatching(/^ws_/),
            name: `${email.slice(0, email.indexOf("@")).toLowerCase()}'s workspace`,
            plan: "free",
            role: "owner",
          },
        ],
      });
      expect(answer.json.csrf_token).not.toBe(pre);
      const expires = Date.parse(answer.json.expires_at) - Date.now();
      expect(expires).toBeGreaterThan(11.9 * 3600_000);
      expect(expires).toBeLessThanOrEqual(12 * 3600_000);
      const session = cookieLine(answer, "kontor_session")!;
      expect(session).toMatch(/HttpOnly/);
      expect(session).toMatch(/SameSite=Lax/);
      expect(session).toMatch(/Path=\//);
      expect(session).toMatch(/Max-Age=43200/);
      expect(cookieLine(answer, "kontor_csrf")).toMatch(/Max-Age=0/);

      const user = await db().user.findUniqueOrThrow({ where: { email: email.toLowerCase() } });
      expect(user.passwordHash).not.toContain(PASSWORD);
      expect(user.passwordHash).toMatch(/^\$argon2/);
      const now = await visitor.session();
      expect(now.json.user.id).toBe(user.id);
      expect(now.json.csrf_token).toBe(answer.json.csrf_token);
    });

    it("names the workspace as asked", async () => {
      const visitor = client();
      const answer = await visitor.signUp({
        email: unique("named"),
        password: PASSWORD,
        workspace_name: "  Lovelace Analytics  ",
      });
      expect(answer.status, answer.text).toBe(201);
      expect(answer.json.workspaces).toEqual([
        expect.objectContaining({ name: "Lovelace Analytics", plan: "free", role: "owner" }),
      ]);
    });

    it("refuses a missing or wrong CSRF token, and writes nothing", async () => {
      const before = await userCount();
      const visitor = client();
      await visitor.session();
      expectError(
        await visitor.api(
          "POST",
          "/sign-up",
          { email: unique("nocsrf"), password: PASSWORD },
          { csrf: null },
        ),
        403,
        "permission_error",
        "csrf_failed",
      );
      expectError(
        await visitor.api(
          "POST",
          "/sign-up",
          { email: unique("badcsrf"), password: PASSWORD },
          { csrf: "x".repeat(43) },
        ),
        403,
        "permission_error",
        "csrf_failed",
      );
      // The header without the cookie it doubles is no proof either.
      const cookieless = client();
      cookieless.csrf = visitor.csrf;
      expectError(
        await cookieless.api("POST", "/sign-up", { email: unique("nocookie"), password: PASSWORD }),
        403,
        "permission_error",
        "csrf_failed",
      );
      expect(await userCount()).toBe(before);
    });

    it("refuses bad input with the field named, and writes nothing", async () => {
      const before = await userCount();
      const visitor = client();
      await visitor.session();
      const cases: [Record<string, unknown>, string][] = [
        [{ password: PASSWORD }, "email"],
        [{ email: "not-an-email", password: PASSWORD }, "email"],
        [{ email: `${"a".repeat(250)}@example.com`, password: PASSWORD }, "email"],
        [{ email: 42, password: PASSWORD }, "email"],
        [{ email: "a\u0001b@example.com", password: PASSWORD }, "email"],
        [{ email: unique("short") }, "password"],
        [{ email: unique("short"), password: "eleven char" }, "password"],
        [{ email: unique("long"), password: "p".repeat(1025) }, "password"],
        [{ email: unique("name"), password: PASSWORD, workspace_name: "   " }, "workspace_name"],
        [{ email: unique("name"), password: PASSWORD, workspace_name: "w".repeat(101) }, "workspace_name"],
        [{ email: unique("name"), password: PASSWORD, workspace_name: "bad\u0000name" }, "workspace_name"],
        [{ email: unique("name"), password: PASSWORD, workspace_name: ["list"] }, "workspace_name"],
        [{ email: unique("extra"), password: PASSWORD, is_admin: true }, "is_admin"],
      ];
      for (const [body, param] of cases) {
        expectError(
          await visitor.api("POST", "/sign-up", body),
          400,
          "invalid_request_error",
          "validation_failed",
          param,
        );
      }
      expectError(
        await visitor.api("POST", "/sign-up", undefined, {
          raw: "{not json",
          headers: { "content-type": "application/json" },
        }),
        400,
        "invalid_request_error",
        "invalid_json",
      );
      expectError(
        await visitor.api("POST", "/sign-up", undefined, {
          raw: "[1]",
          headers: { "content-type": "application/json" },
        }),
        400,
        "invalid_request_error",
        "invalid_json",
      );
      expectError(
        await visitor.api("POST", "/sign-up", undefined, {
          raw: `email=${unique("form")}&password=${PASSWORD}`,
          headers: { "content-type": "application/x-www-form-urlencoded" },
        }),
        415,
        "invalid_request_error",
        "unsupported_media_type",
      );
      const huge = JSON.stringify({
        email: unique("huge"),
        password: PASSWORD,
        workspace_name: "w".repeat(MAX_ACCOUNT_BODY_BYTES),
      });
      expectError(
        await visitor.api("POST", "/sign-up", undefined, {
          raw: huge,
          headers: { "content-type": "application/json" },
        }),
        413,
        "invalid_request_error",
        "payload_too_large",
      );
      expect(await userCount()).toBe(before);
    });

    it("refuses an e-mail in use (whatever its case) with 409 email_taken", async () => {
      const taken = await existingUser(db());
      const before = await userCount();
      const visitor = client();
      expectError(
        await visitor.signUp({ email: taken.email.toUpperCase(), password: PASSWORD }),
        409,
        "invalid_request_error",
        "email_taken",
        "email",
      );
      expect(await userCount()).toBe(before);
      expect(cookieLine(await visitor.session(), "kontor_session")).toBeUndefined();
    });
  });

  describe("sign-in and sign-out", () => {
    it("signs in with the right password; a wrong one and an unknown e-mail are the same 401", async () => {
      const user = await existingUser(db());
      const visitor = client();
      const wrong = await visitor.signIn(user.email, "not the password at all");
      expectError(wrong, 401, "authentication_error", "invalid_credentials");
      const unknown = await visitor.signIn(unique("nobody"), PASSWORD);
      expectError(unknown, 401, "authentication_error", "invalid_credentials");
      expect(unknown.json.error.message).toBe(wrong.json.error.message);

      const answer = await visitor.signIn(user.email.toUpperCase());
      expect(answer.status, answer.text).toBe(200);
      expect(answer.json).toMatchObject({
        user: { id: user.userId, email: user.email },
        workspaces: [{ id: user.workspaceId, name: "Existing Co", plan: "pro", role: "owner" }],
      });
      expect(cookieLine(answer, "kontor_session")).toMatch(/HttpOnly/);
      expect((await visitor.session()).json.user.id).toBe(user.userId);
    });

    it("refuses a sign-in without the CSRF token, and bad input", async () => {
      const user = await existingUser(db());
      const visitor = client();
      await visitor.session();
      expectError(
        await visitor.api("POST", "/sign-in", { email: user.email, password: PASSWORD }, { csrf: null }),
        403,
        "permission_error",
        "csrf_failed",
      );
      expectError(
        await visitor.api("POST", "/sign-in", { email: user.email }),
        400,
        "invalid_request_error",
        "validation_failed",
        "password",
      );
      expectError(
        await visitor.api("POST", "/sign-in", { email: user.email, password: 12345678901234 }),
        400,
        "invalid_request_error",
        "validation_failed",
        "password",
      );
      expectError(
        await visitor.api("POST", "/sign-in", { email: "e".repeat(300), password: PASSWORD }),
        400,
        "invalid_request_error",
        "validation_failed",
        "email",
      );
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(0);
    });

    it(`after ${SIGN_IN_FAILURES_PER_ACCOUNT} wrong passwords answers 429 with Retry-After, even to the right one`, async () => {
      const user = await existingUser(db());
      const visitor = client();
      for (let i = 0; i < SIGN_IN_FAILURES_PER_ACCOUNT; i++) {
        expectError(
          await visitor.signIn(user.email, `wrong password ${i}`),
          401,
          "authentication_error",
          "invalid_credentials",
        );
      }
      const limited = await visitor.signIn(user.email);
      expectError(limited, 429, "rate_limit_error", "rate_limit_exceeded");
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(0);
    });

    it("signs out: 204, the cookie cleared, the session gone; without a session 204 too", async () => {
      const user = await existingUser(db());
      const visitor = client();
      await visitor.signIn(user.email);
      const stale = visitor.cookieHeader();
      expectError(
        await visitor.api("POST", "/sign-out", undefined, { csrf: "wrong" }),
        403,
        "permission_error",
        "csrf_failed",
      );
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(1);

      const out = await visitor.api("POST", "/sign-out");
      expect(out.status).toBe(204);
      expect(out.headers.get("cache-control")).toBe("no-store");
      expect(cookieLine(out, "kontor_session")).toMatch(/Max-Age=0/);
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(0);
      expect((await visitor.session()).json.user).toBeNull();
      // The old cookie no longer works anywhere.
      const replay = await fetch(`${server().url}/dashboard/api/session`, { headers: { cookie: stale } });
      expect(((await replay.json()) as { user: unknown }).user).toBeNull();

      const again = await client().api("POST", "/sign-out", undefined, { csrf: null });
      expect(again.status).toBe(204);
    });

    it("an expired session is signed out: the session answer has no user, GraphQL says session_expired", async () => {
      const user = await existingUser(db());
      const visitor = client();
      await visitor.signIn(user.email);
      await db().session.updateMany({
        where: { userId: user.userId },
        data: { expiresAt: new Date(Date.now() - 1000) },
      });
      const now = await visitor.session();
      expect(now.json.user).toBeNull();
      expect(now.json.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const graphql = await fetch(`${server().url}/graphql`, {
        method: "POST",
        headers: {
          cookie: visitor.cookieHeader(),
          "content-type": "application/json",
          "x-csrf-token": "anything",
        },
        body: JSON.stringify({ query: "{ viewer { user { id } } }" }),
      });
      expect(graphql.status).toBe(401);
      expect(
        ((await graphql.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code,
      ).toBe("session_expired");
    });
  });

  describe("password change", () => {
    it("changes the password and ends every other session of the user, this one staying", async () => {
      const user = await existingUser(db());
      const here = client();
      const elsewhere = client();
      await here.signIn(user.email);
      await elsewhere.signIn(user.email);
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(2);
      const next = "a brand new passphrase";
      const changed = await here.api("POST", "/password", { current_password: PASSWORD, new_password: next });
      expect(changed.status, changed.text).toBe(204);
      expect(changed.headers.get("cache-control")).toBe("no-store");
      expect((await here.session()).json.user.id).toBe(user.userId);
      expect((await elsewhere.session()).json.user).toBeNull();
      expect(await db().session.count({ where: { userId: user.userId } })).toBe(1);
      expectError(
        await client().signIn(user.email, PASSWORD),
        401,
        "authentication_error",
        "invalid_credentials",
      );
      expect((await client().signIn(user.email, next)).status).toBe(200);
    });

    it("refuses a wrong current password, a bad new one, the current one again, no session and no CSRF token; nothing changes", async () => {
      const user = await existingUser(db());
      const here = client();
      await here.signIn(user.email);
      const hash = (await db().user.findUniqueOrThrow({ where: { id: user.userId } })).passwordHash;
      expectError(
        await here.api("POST", "/password", {
          current_password: "not it at all",
          new_password: "another passphrase",
        }),
        400,
        "invalid_request_error",
        "validation_failed",
        "current_password",
      );
      const same = await here.api("POST", "/password", {
        current_password: PASSWORD,
        new_password: PASSWORD,
      });
      expectError(same, 400, "invalid_request_error", "validation_failed", "new_password");
      expect(same.json.error.message).toBe("The new password must differ from the current one.");
      expectError(
        await here.api("POST", "/password", { current_password: PASSWORD, new_password: "too short" }),
        400,
        "invalid_request_error",
        "validation_failed",
        "new_password",
      );
      expectError(
        await here.api("POST", "/password", { current_password: PASSWORD, new_password: "n".repeat(1025) }),
        400,
        "invalid_request_error",
        "validation_failed",
        "new_password",
      );
      expectError(
        await here.api("POST", "/password", { current_password: PASSWORD }),
        400,
        "invalid_request_error",
        "validation_failed",
        "new_password",
      );
      expectError(
        await here.api(
          "POST",
          "/password",
          { current_password: PASSWORD, new_password: "another passphrase" },
          { csrf: null },
        ),
        403,
        "permission_error",
        "csrf_failed",
      );
      const visitor = client();
      await visitor.session();
      expectError(
        await visitor.api("POST", "/password", {
          current_password: PASSWORD,
          new_password: "another passphrase",
        }),
        401,
        "authentication_error",
        "session_required",
      );
      expect((await db().user.findUniqueOrThrow({ where: { id: user.userId } })).passwordHash).toBe(hash);
    });
  });

  describe("invitations", () => {
    /** An owner signed in, and an invitation of theirs made over GraphQL: its token. */
    async function invite(email: string, role: "owner" | "member" = "member") {
      const owner = await existingUser(db(), unique("owner"), "Inviting Co");
      const dashboard = client();
      await dashboard.signIn(owner.email);
      const made = await dashboard.graphql(
        `mutation($input: InviteMemberInput!) { inviteMember(input: $input) { invitation { id email role } accept_url } }`,
        {
          input: { email, role },
        },
      );
      expect(made.json.errors, JSON.stringify(made.json)).toBeUndefined();
      const url = made.json.data.inviteMember.accept_url as string;
      expect(url).toMatch(new RegExp(`^${server().url}/dashboard/invitations#token=inv_[0-9A-Za-z]{43}$`));
      return {
        owner,
        dashboard,
        token: url.slice(url.indexOf("#token=") + 7),
        id: made.json.data.inviteMember.invitation.id as string,
      };
    }

    it("a signed-in user with the invited e-mail accepts: they join with the invited role, once", async () => {
      const invitee = await existingUser(db(), unique("invitee"), "Invitee Own");
      const { owner, token } = await invite(invitee.email.toUpperCase());
      const dashboard = client();
      await dashboard.signIn(invitee.email);
      const accepted = await dashboard.api("POST", "/invitations/accept", { token });
      expect(accepted.status, accepted.text).toBe(200);
      expect(accepted.json.workspaces).toEqual([
        { id: invitee.workspaceId, name: "Invitee Own", plan: "pro", role: "owner" },
        { id: owner.workspaceId, name: "Inviting Co", plan: "pro", role: "member" },
      ]);
      expectError(
        await dashboard.api("POST", "/invitations/accept", { token }),
        400,
        "invalid_request_error",
        "invitation_invalid",
        "token",
      );
    });

    it("refuses another e-mail's invitation, an unknown, revoked or expired one, no session and no CSRF token; nothing is written", async () => {
      const { owner, token, id } = await invite(unique("someone-else"));
      const stranger = await existingUser(db());
      const dashboard = client();
      await dashboard.signIn(stranger.email);
      expectError(
        await dashboard.api("POST", "/invitations/accept", { token }),
        400,
        "invalid_request_error",
        "invitation_invalid",
        "token",
      );
      expectError(
        await dashboard.api("POST", "/invitations/accept", { token: "inv_nope" }),
        400,
        "invalid_request_error",
        "invitation_invalid",
        "token",
      );
      expectError(
        await dashboard.api("POST", "/invitations/accept", { token: "x".repeat(5000) }),
        400,
        "invalid_request_error",
        "invitation_invalid",
        "token",
      );
      expectError(
        await dashboard.api("POST", "/invitations/accept", {}),
        400,
        "invalid_request_error",
        "validation_failed",
        "token",
      );
      expectError(
        await dashboard.api("POST", "/invitations/accept", { token }, { csrf: null }),
        403,
        "permission_error",
        "csrf_failed",
      );
      expectError(
        await client().api("POST", "/invitations/accept", { token }),
        401,
        "authentication_error",
        "session_required",
      );
      expect(await db().membership.count({ where: { workspaceId: owner.workspaceId } })).toBe(1);
      expect((await db().invitation.findUniqueOrThrow({ where: { id } })).acceptedAt).toBeNull();

      const expired = await invite(stranger.email);
      await db().invitation.update({
        where: { id: expired.id },
        data: { expiresAt: new Date(Date.now() - 1000) },
      });
      expectError(
        await dashboard.api("POST", "/invitations/accept", { token: expired.token }),
        400,
        "invalid_request_error",
        "invitation_invalid",
        "token",
      );
      expect(await db().membership.count({ where: { userId: stranger.userId } })).toBe(1);
    });

    it("looks an invitation up by its token for the sign-up form; sign-up with it joins that workspace only (one of their own only with workspace_name); a bad token creates no account", async () => {
      const email = unique("newcomer");
      const { owner, token, dashboard } = await invite(email, "owner");
      const before = await userCount();
      const wrongPerson = client();
      expectError(
        await wrongPerson.signUp({ email: unique("other"), password: PASSWORD, invitation_token: token }),
        400,
        "invalid_request_error",
        "invitation_invalid",
        "invitation_token",
      );
      expect(await userCount()).toBe(before);

      // What the sign-up form fills in: the invited address, the role and the workspace.
      const found = await wrongPerson.api("POST", "/invitations/lookup", { token });
      expect(found.status, found.text).toBe(200);
      expect(found.headers.get("cache-control")).toBe("no-store");
      expect(found.json).toEqual({
        email: email.toLowerCase(),
        role: "owner",
        workspace: { id: owner.workspaceId, name: "Inviting Co" },
        expires_at: expect.any(String),
      });
      expectError(
        await wrongPerson.api("POST", "/invitations/lookup", { token: "inv_nope" }),
        400,
        "invalid_request_error",
        "invitation_invalid",
        "token",
      );
      expectError(
        await wrongPerson.api("POST", "/invitations/lookup", { token }, { csrf: null }),
        403,
        "permission_error",
        "csrf_failed",
      );

      const newcomer = client();
      const answer = await newcomer.signUp({ email, password: PASSWORD, invitation_token: token });
      expect(answer.status, answer.text).toBe(201);
      expect(answer.json.workspaces).toEqual([
        { id: owner.workspaceId, name: "Inviting Co", plan: "pro", role: "owner" },
      ]);
      expect(await userCount()).toBe(before + 1);
      expect(await db().membership.count({ where: { userId: answer.json.user.id } })).toBe(1);

      // Asked for: a workspace of their own as well.
      const second = unique("newcomer-own");
      const made = await dashboard.graphql(
        `mutation($input: InviteMemberInput!) { inviteMember(input: $input) { accept_url } }`,
        { input: { email: second, role: "member" } },
      );
      const url = made.json.data.inviteMember.accept_url as string;
      const withOwn = await newcomer.signUp({
        email: second,
        password: PASSWORD,
        invitation_token: url.slice(url.indexOf("#token=") + 7),
        workspace_name: "My Own Place",
      });
      expect(withOwn.status, withOwn.text).toBe(201);
      expect(withOwn.json.workspaces).toHaveLength(2);
      expect(withOwn.json.workspaces).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ name: "My Own Place", plan: "free", role: "owner" }),
          { id: owner.workspaceId, name: "Inviting Co", plan: "pro", role: "member" },
        ]),
      );
    });
  });
});

e2e("dashboard sign-up limit", (server) => {
  it(`allows ${SIGN_UPS_PER_IP} sign-ups per IP an hour, then 429 with Retry-After, writing nothing`, async () => {
    const prisma = server().running.db.prisma;
    for (let i = 0; i < SIGN_UPS_PER_IP; i++) {
      const answer = await new DashboardClient(server().url).signUp({
        email: unique(`limit${i}`),
        password: PASSWORD,
      });
      expect(answer.status, answer.text).toBe(201);
    }
    const before = await prisma.user.count();
    const limited = await new DashboardClient(server().url).signUp({
      email: unique("one-too-many"),
      password: PASSWORD,
    });
    expectError(limited, 429, "rate_limit_error", "rate_limit_exceeded");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await prisma.user.count()).toBe(before);
  });
});
