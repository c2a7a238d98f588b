import { beforeAll, describe, expect, it } from "vitest";
import {
  createUser,
  type DashboardPage,
  expectLabelled,
  openDashboard,
  PASSWORD,
  screenshots,
  sessionGraphql,
  settle,
  signInApi,
  signInUi,
  type TestUser,
  uniqueEmail,
  useChromium,
} from "../../support/dashboard.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The members screen in headless Chromium: an owner invites by e-mail (the accept link shown
 * once), the invitee joins, roles change, members are removed, the last owner stays; a member sees
 * the list with every owner action disabled, and a forced attempt shows owner_required.
 */

const browser = useChromium();

e2e("the dashboard's members", (server) => {
  let owner: TestUser;

  beforeAll(async () => {
    owner = await createUser(server(), { label: "team-owner", plan: "plus", workspaceName: "The Team" });
  });

  const openMembers = async (user: TestUser, workspace?: string): Promise<DashboardPage> => {
    const dashboard = await openDashboard(browser(), server());
    await signInUi(dashboard, user.email);
    if (workspace) await dashboard.page.getByLabel("Workspace").selectOption({ label: workspace });
    await dashboard.page.getByRole("link", { name: "Members", exact: true }).click();
    await dashboard.page.getByRole("heading", { level: 1, name: "Members" }).waitFor();
    await dashboard.page.getByRole("table", { name: "Members" }).waitFor();
    return dashboard;
  };

  const memberRow = (dashboard: DashboardPage, email: string) =>
    dashboard.page.getByRole("table", { name: "Members" }).getByRole("row").filter({ hasText: email });

  /** Invites through the screen and returns the accept link it shows (once). */
  const invite = async (dashboard: DashboardPage, email: string, role: "Member" | "Owner") => {
    const { page } = dashboard;
    await page.getByLabel("E-mail address").fill(email);
    await page.getByLabel("Role", { exact: true }).selectOption({ label: role });
    await page.getByRole("button", { name: "Send invitation" }).click();
    const link = page.getByLabel(`Invitation link for ${email}`);
    await link.waitFor();
    return link.inputValue();
  };

  it("invites by e-mail: the accept link is shown once and listed as pending; the invitee joins with the role; roles change, each after a confirmation", async () => {
    const dashboard = await openMembers(owner);
    const { page } = dashboard;
    expect(await expectLabelled(page)).toEqual([
      "Workspace",
      `Role of ${owner.email}`,
      "E-mail address",
      "Role",
    ]);
    expect(await memberRow(dashboard, owner.email).textContent()).toContain("you");

    const invitee = await createUser(server(), { label: "joiner" });
    const url = await invite(dashboard, invitee.email, "Member");
    expect(url).toMatch(
      new RegExp(`^${server().url.replace(/[.]/g, "\\.")}/dashboard/invitations#token=inv\\w*_`),
    );
    await page.getByText(`Send this link to ${invitee.email} yourself: it is shown only once`).waitFor();
    const pending = page.getByRole("table", { name: "Pending invitations" });
    await pending.getByRole("row").filter({ hasText: invitee.email }).waitFor();
    expect(
      await pending.getByRole("row").filter({ hasText: invitee.email }).locator("td").nth(1).textContent(),
    ).toBe("member");
    await screenshots(page, "members-invited");
    // Shown once: not in the page after a reload.
    await page.reload();
    await pending.waitFor();
    expect(await page.content()).not.toContain(new URL(url).hash.slice(1));

    // The invitee accepts in their own browser().
    const joiner = await openDashboard(browser(), server());
    await signInUi(joiner, invitee.email);
    await joiner.page.goto(url.replace(server().url, ""));
    await joiner.page.getByRole("button", { name: "Accept invitation" }).click();
    await joiner.page.getByText("You joined The Team as a member.").waitFor();
    await joiner.close();

    await page.reload();
    const row = memberRow(dashboard, invitee.email);
    await row.waitFor();
    expect(await row.getByLabel(`Role of ${invitee.email}`).inputValue()).toBe("member");
    expect(await pending.getByRole("row").filter({ hasText: invitee.email }).count()).toBe(0);

    // A role change asks first: cancelled, nothing changes.
    const session = await signInApi(server(), invitee.email);
    const viewer = () =>
      sessionGraphql<{ viewer: { role: string } }>(
        server(),
        session,
        "{ viewer { role } }",
        {},
        owner.workspaceId,
      );
    const roleField = row.getByLabel(`Role of ${invitee.email}`);
    await roleField.selectOption("owner");
    const confirm = page.getByRole("dialog", { name: `Make ${invitee.email} an owner?` });
    await confirm.waitFor();
    await screenshots(page, "members-role-confirm");
    await confirm.getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect(await roleField.inputValue()).toBe("member");
    expect((await viewer()).viewer.role).toBe("member");

    // Cancelled and chosen again in one go, before the browser's close event for the first dialog
    // comes (a slow machine, a quick hand): the new dialog stays open.
    await roleField.selectOption("owner");
    await confirm.waitFor();
    await roleField.evaluate(async (select: HTMLSelectElement) => {
      const cancel = [...document.querySelectorAll<HTMLButtonElement>("dialog[open] button")].find(
        (button) => button.textContent === "Cancel",
      );
      if (!cancel) throw new Error("the dialog has no Cancel button");
      cancel.click();
      // React closes the dialog within microtasks; the close event is a task of its own, after this one.
      for (let i = 0; i < 100 && document.querySelector("dialog[open]"); i++) await Promise.resolve();
      if (document.querySelector("dialog[open]")) throw new Error("Cancel did not close the dialog");
      select.value = "owner";
      select.dispatchEvent(new Event("change", { bubbles: true }));
    });
    await settle(page);
    await settle(page);
    expect(await confirm.isVisible()).toBe(true);
    await confirm.getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect((await viewer()).viewer.role).toBe("member");

    // Made an owner, then a member again, each confirmed.
    await roleField.selectOption("owner");
    await confirm.getByRole("button", { name: "Make owner" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `${invitee.email} is now an owner.` })
      .waitFor();
    expect((await viewer()).viewer.role).toBe("owner");
    await roleField.selectOption("member");
    await page
      .getByRole("dialog", { name: `Make ${invitee.email} a member?` })
      .getByRole("button", { name: "Make member" })
      .click();
    await page
      .getByRole("status")
      .filter({ hasText: `${invitee.email} is now a member.` })
      .waitFor();
    expect((await viewer()).viewer.role).toBe("member");
    await screenshots(page, "members");
    await dashboard.close();
  });

  it("refuses what the API refuses, with its message: inviting a member again, leaving no owner", async () => {
    const existing = await createUser(server(), { label: "existing" });
    const dashboard = await openMembers(owner);
    const { page } = dashboard;
    const url = await invite(dashboard, existing.email, "Member");
    const session = await signInApi(server(), existing.email);
    const accepted = await fetch(`${server().url}/dashboard/api/invitations/accept`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Cookie: session.cookie, "X-CSRF-Token": session.csrf },
      body: JSON.stringify({ token: new URL(url).hash.replace("#token=", "") }),
    });
    expect(accepted.status).toBe(200);

    dashboard.allowErrors(/status of (400|409)/);
    await page.getByLabel("E-mail address").fill(existing.email);
    await page.getByRole("button", { name: "Send invitation" }).click();
    // Under the field it is about, once: not again in a banner.
    const refused = page.getByRole("alert").filter({ hasText: `${existing.email} is already a member` });
    await refused.waitFor();
    expect(await refused.textContent()).toContain(`${existing.email} is already a member of the workspace.`);
    expect(await refused.getAttribute("class")).toBe("field-error");
    expect(await page.getByText(`${existing.email} is already a member`).count()).toBe(1);
    expect(await page.getByLabel("E-mail address").getAttribute("aria-invalid")).toBe("true");

    // The only owner cannot become a member, nor be removed.
    await page.reload();
    await memberRow(dashboard, owner.email).waitFor();
    await memberRow(dashboard, owner.email).getByLabel(`Role of ${owner.email}`).selectOption("member");
    const demote = page.getByRole("dialog", { name: `Make ${owner.email} a member?` });
    await demote.getByRole("button", { name: "Make member" }).click();
    const lastOwner = demote.locator('[role="alert"][data-code="invalid_state"]');
    await lastOwner.waitFor();
    expect(await lastOwner.textContent()).toContain("The workspace needs at least one owner");
    await demote.getByRole("button", { name: "Cancel" }).click();
    await page.reload();
    await memberRow(dashboard, owner.email).waitFor();
    expect(await memberRow(dashboard, owner.email).getByLabel(`Role of ${owner.email}`).inputValue()).toBe(
      "owner",
    );
    await memberRow(dashboard, owner.email)
      .getByRole("button", { name: `Remove ${owner.email}` })
      .click();
    const dialog = page.getByRole("dialog", { name: `Remove ${owner.email}?` });
    await dialog.getByText("You will lose access to this workspace.").waitFor();
    await dialog.getByRole("button", { name: "Remove" }).click();
    await expect.poll(() => dialog.locator('[role="alert"][data-code="invalid_state"]').count()).toBe(1);
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dashboard.close();
  });

  it("revokes a pending invitation after a confirmation: its link no longer works", async () => {
    const email = uniqueEmail("revoked-invitee");
    const dashboard = await openMembers(owner);
    const { page } = dashboard;
    const url = await invite(dashboard, email, "Owner");
    const pending = page
      .getByRole("table", { name: "Pending invitations" })
      .getByRole("row")
      .filter({ hasText: email });
    await pending.waitFor();
    expect(await pending.locator("td").nth(1).textContent()).toBe("owner");
    // Asked first: cancelled, it stays pending.
    await pending.getByRole("button", { name: `Revoke the invitation of ${email}` }).click();
    const confirm = page.getByRole("dialog", { name: `Revoke the invitation of ${email}?` });
    await confirm.getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("dialog").count()).toBe(0);
    expect(await pending.count()).toBe(1);
    await pending.getByRole("button", { name: `Revoke the invitation of ${email}` }).click();
    await confirm.getByRole("button", { name: "Revoke invitation" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `The invitation of ${email} was revoked.` })
      .waitFor();
    await expect.poll(() => pending.count()).toBe(0);
    await dashboard.close();

    // Signing up with the revoked link: the invitation is refused, and nothing is created.
    const newcomer = await openDashboard(browser(), server());
    newcomer.allowErrors(/status of 400/);
    await newcomer.page.goto(url.replace(server().url, ""));
    await newcomer.page.getByRole("link", { name: "Create an account" }).click();
    await newcomer.page.getByLabel("E-mail").fill(email);
    await newcomer.page.getByLabel("Password").fill(PASSWORD);
    await newcomer.page.getByRole("button", { name: "Create account" }).click();
    await expect
      .poll(() => newcomer.page.locator('[role="alert"][data-code="invitation_invalid"]').count())
      .toBe(1);
    await newcomer.close();
  });

  describe("as a member", () => {
    it("sees the members with every owner action disabled; a forced attempt shows owner_required; an owner removes them", async () => {
      const member = await createUser(server(), { label: "plain-member", workspaceName: "Member's Own" });
      const owners = await openMembers(owner);
      const url = await invite(owners, member.email, "Member");
      const session = await signInApi(server(), member.email);
      const accepted = await fetch(`${server().url}/dashboard/api/invitations/accept`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Cookie: session.cookie, "X-CSRF-Token": session.csrf },
        body: JSON.stringify({ token: new URL(url).hash.replace("#token=", "") }),
      });
      expect(accepted.status).toBe(200);

      const dashboard = await openMembers(member, "The Team (member)");
      const { page } = dashboard;
      await page
        .getByRole("note")
        .filter({ hasText: "Only owners can invite, change and remove members." })
        .waitFor();
      await memberRow(dashboard, owner.email).waitFor();
      expect(await memberRow(dashboard, member.email).textContent()).toContain("you");
      for (const email of [owner.email, member.email]) {
        expect(await page.getByLabel(`Role of ${email}`).isDisabled()).toBe(true);
        expect(
          await page.getByRole("button", { name: `Remove ${email}` }).getAttribute("aria-disabled"),
        ).toBe("true");
      }
      expect(await page.getByLabel("E-mail address").isDisabled()).toBe(true);
      expect(await page.getByRole("button", { name: "Send invitation" }).getAttribute("aria-disabled")).toBe(
        "true",
      );
      // Pending invitations are the owners' business.
      expect(await page.getByRole("heading", { name: "Pending invitations" }).count()).toBe(0);
      await screenshots(page, "members-member-view");

      // Forced: the button's lock taken away, the request goes out, and the server says no.
      dashboard.allowErrors(/status of 403/);
      const remove = page.getByRole("button", { name: `Remove ${owner.email}` });
      await remove.evaluate((button) => button.removeAttribute("aria-disabled"));
      await remove.click();
      const dialog = page.getByRole("dialog", { name: `Remove ${owner.email}?` });
      await dialog.getByRole("button", { name: "Remove" }).click();
      const alert = dialog.locator('[role="alert"][data-code="owner_required"]');
      await alert.waitFor();
      expect(await alert.textContent()).toContain("Only an owner of the workspace may do this");
      await dialog.getByRole("button", { name: "Cancel" }).click();
      // So is a forced role change.
      const role = page.getByLabel(`Role of ${member.email}`);
      await role.evaluate((select) => select.removeAttribute("disabled"));
      await role.selectOption("owner");
      const promote = page.getByRole("dialog", { name: `Make ${member.email} an owner?` });
      await promote.getByRole("button", { name: "Make owner" }).click();
      await expect.poll(() => promote.locator('[role="alert"][data-code="owner_required"]').count()).toBe(1);
      await promote.getByRole("button", { name: "Cancel" }).click();

      // The owner removes the member: the member's list of workspaces loses it.
      await owners.page.reload();
      await memberRow(owners, member.email)
        .getByRole("button", { name: `Remove ${member.email}` })
        .click();
      const confirm = owners.page.getByRole("dialog", { name: `Remove ${member.email}?` });
      await confirm.getByRole("button", { name: "Remove" }).click();
      await owners.page
        .getByRole("status")
        .filter({ hasText: `${member.email} was removed from the workspace.` })
        .waitFor();
      await expect.poll(() => memberRow(owners, member.email).count()).toBe(0);
      await owners.close();

      // The member's next request in that workspace is refused (not_a_member): the app reloads the session and moves on.
      await page.getByRole("link", { name: "Overview", exact: true }).click();
      await expect
        .poll(() => page.getByLabel("Workspace").locator("option").allTextContents())
        .toEqual(["Member's Own (owner)"]);
      await expect.poll(() => page.locator("main").textContent()).toContain("Member's Own");
      await dashboard.close();
    });
  });
});
