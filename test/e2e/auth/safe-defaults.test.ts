import { randomBytes } from "node:crypto";
import { hash, parseOptions } from "@node-rs/argon2";
import { describe, expect, it } from "vitest";
import { createWorkspace } from "../../../server/accounts/workspaces.ts";
import { PASSWORD_HASHING } from "../../../server/auth/passwords.ts";
import { spawnMain } from "../../support/child-server.ts";
import { DashboardClient, PASSWORD } from "../../support/dashboard-session.ts";
import { e2e } from "../../support/suite.ts";

e2e("safe defaults", (server) => {
  const db = () => server().running.db.prisma;

  it("a password hashed with older parameters is hashed again at the next sign-in, and still signs in", async () => {
    const email = `old-hash-${randomBytes(4).toString("hex")}@example.com`;
    const { owner_id } = await createWorkspace(db(), {
      name: "Old hash",
      plan: "free",
      ownerEmail: email,
      ownerPassword: PASSWORD,
    });
    const old = await hash(PASSWORD, { memoryCost: 4096, timeCost: 3, parallelism: 1 });
    await db().user.update({ where: { id: owner_id }, data: { passwordHash: old } });

    expect((await new DashboardClient(server().url).signIn(email)).status).toBe(200);
    const upgraded = (await db().user.findUniqueOrThrow({ where: { id: owner_id } })).passwordHash;
    expect(upgraded).not.toBe(old);
    expect(parseOptions(upgraded)).toMatchObject({
      memoryCost: PASSWORD_HASHING.memoryCost,
      timeCost: PASSWORD_HASHING.timeCost,
      parallelism: 1,
    });
    expect((await new DashboardClient(server().url).signIn(email)).status).toBe(200);
    // A wrong password changes nothing.
    expect((await new DashboardClient(server().url).signIn(email, "not the password")).status).toBe(401);
    expect((await db().user.findUniqueOrThrow({ where: { id: owner_id } })).passwordHash).toBe(upgraded);
  });
});

describe("start-up", () => {
  it("a server whose PUBLIC_URL is not loopback refuses to start until KONTOR_ENV is set", async () => {
    const run = spawnMain({
      PORT: "0",
      PUBLIC_URL: "https://kontor.example.com",
      DATA_DIR: `/tmp/kontor-unused-${randomBytes(4).toString("hex")}`,
    });
    const exit = await run.exited;
    expect(exit.code).not.toBe(0);
    expect(run.stderr()).toMatch(
      /PUBLIC_URL https:\/\/kontor\.example\.com is not a loopback address, so KONTOR_ENV must be set/,
    );
    expect(run.stdout()).not.toMatch(/ktr_live_/);
  });
});
