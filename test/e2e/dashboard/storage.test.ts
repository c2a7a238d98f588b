import { createHash, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import {
  addMember,
  createUser,
  type DashboardPage,
  expectLabelled,
  openDashboard,
  screenshots,
  sessionGraphql,
  signInApi,
  signInUi,
  type TestUser,
  useChromium,
} from "../../support/dashboard.ts";
import { e2e } from "../../support/suite.ts";

/**
 * The storage screen in headless Chromium: usage against the quota and the plan's limits, buckets
 * (a bad and a taken name refused under the field, delete only when empty), files uploaded through
 * the file input as the raw body (several at once, with progress, cancellable), listed, searched,
 * downloaded byte for byte under their name and deleted; the quota refusing an upload (the API's
 * storage_quota_exceeded, and the screen's own check before a byte is sent); and a member, who
 * reads and writes the stored files as an owner does.
 */

const browser = useChromium();

/** A file as page.setInputFiles takes it. */
interface Upload {
  name: string;
  mimeType: string;
  buffer: Buffer;
}

const pdf: Upload = { name: "résumé 2026.pdf", mimeType: "application/pdf", buffer: randomBytes(1_500) };
const notes: Upload = {
  name: "notes.txt",
  mimeType: "text/plain",
  buffer: Buffer.from(`${"line one\nline two\n".repeat(111)}xx`),
};
// Exactly 500 bytes of JSON: the raw route must take it as a file, not as a JSON upload.
const data: Upload = {
  name: "data.json",
  mimeType: "application/json",
  buffer: Buffer.from(JSON.stringify({ pad: "x".repeat(490) })),
};

e2e("the dashboard's storage", (server) => {
  beforeAll(async () => {
    await createUser(server(), { label: "storage-owner", plan: "plus", workspaceName: "Archive Co" });
    expect([pdf.buffer.length, notes.buffer.length, data.buffer.length]).toEqual([1_500, 2_000, 500]);
  });

  /** The user's session from Node, for setting up and checking what the screen did. */
  const api = async (user: TestUser) => {
    const session = await signInApi(server(), user.email);
    const gql = <T>(query: string, variables: Record<string, unknown> = {}) =>
      sessionGraphql<T>(server(), session, query, variables, user.workspaceId);
    return {
      gql,
      state: () =>
        gql<{
          buckets: { data: { id: string; name: string }[] };
          storageUsage: { used_bytes: number; object_count: number };
        }>("{ buckets(limit: 100) { data { id name } } storageUsage { used_bytes object_count } }"),
      /** A bucket holding `files`, made through the API (for tests whose subject is not making them). */
      async seed(bucket: string, files: Upload[]) {
        const { createBucket } = await gql<{ createBucket: { id: string } }>(
          "mutation($name: String!) { createBucket(name: $name) { id } }",
          { name: bucket },
        );
        for (const file of files) {
          const query = new URLSearchParams({ file_name: file.name, content_type: file.mimeType });
          const response = await fetch(`${server().api}/buckets/${createBucket.id}/objects?${query}`, {
            method: "POST",
            headers: {
              Cookie: session.cookie,
              "X-CSRF-Token": session.csrf,
              "Kontor-Workspace": user.workspaceId,
              "Content-Type": "application/octet-stream",
            },
            body: new Uint8Array(file.buffer),
          });
          expect(response.status, await response.clone().text()).toBe(201);
        }
        return createBucket.id;
      },
    };
  };

  const openStorage = async (user: TestUser, workspace?: string): Promise<DashboardPage> => {
    const dashboard = await openDashboard(browser(), server());
    const { page } = dashboard;
    await signInUi(dashboard, user.email);
    if (workspace) await page.getByLabel("Workspace").selectOption({ label: workspace });
    await page.getByRole("link", { name: "Storage", exact: true }).click();
    await page.getByRole("heading", { level: 1, name: "Storage" }).waitFor();
    await page.getByTestId("storage-used").waitFor();
    return dashboard;
  };

  const usage = async (page: Page) => ({
    used: await page.getByTestId("storage-used").textContent(),
    files: await page.getByTestId("storage-files").textContent(),
    buckets: await page.getByTestId("storage-buckets").textContent(),
  });

  const filesTable = (page: Page, bucket: string) => page.getByRole("table", { name: `Files in ${bucket}` });
  const fileRow = (page: Page, bucket: string, name: string) =>
    filesTable(page, bucket).getByRole("row").filter({ hasText: name });

  /** Clicks a download button and answers the file the browser saved: its suggested name and bytes. */
  const download = async (page: Page, name: string) => {
    const [saved] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: `Download ${name}`, exact: true }).click(),
    ]);
    return { name: saved.suggestedFilename(), bytes: await readFile((await saved.path())!) };
  };

  it("creates a bucket (a bad name and a taken name are refused with the API's message under the field, and nothing is created), and uploads a file dropped on the form", async () => {
    const user = await createUser(server(), { label: "storage-buckets", plan: "plus" });
    const userApi = await api(user);
    const dashboard = await openStorage(user);
    const { page } = dashboard;
    expect(await usage(page)).toEqual({ used: "0 B", files: "0", buckets: "0" });
    expect(await page.getByTestId("storage-limit").textContent()).toBe("10 GB");
    expect(await page.getByTestId("storage-plan").textContent()).toBe("plus");
    await page.getByText("No buckets yet. Create one to upload files.").waitFor();
    expect(await expectLabelled(page)).toEqual(expect.arrayContaining(["Bucket name"]));
    await screenshots(page, "storage-empty");

    const name = page.getByLabel("Bucket name");
    const create = page.getByRole("button", { name: "Create bucket" });
    dashboard.allowErrors(/status of (400|409)/);
    await name.fill("Quarterly_Reports");
    await create.click();
    await expect.poll(() => name.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator(".field-error").textContent()).toBe(
      "name must be 3–63 characters of lower-case letters a-z, digits and -.",
    );
    expect((await userApi.state()).buckets.data).toEqual([]);

    await name.fill("reports");
    await create.click();
    await page.getByRole("status").filter({ hasText: "Bucket reports created." }).waitFor();
    expect(await name.inputValue()).toBe("");
    expect(await name.getAttribute("aria-invalid")).toBeNull();
    await page.getByRole("link", { name: "reports" }).waitFor();
    // The new bucket is open: its (empty) files, and the upload form.
    await page.getByRole("heading", { name: "Files in reports" }).waitFor();
    await page.getByText("No files yet. Upload some above.").waitFor();
    await expect.poll(() => page.getByTestId("storage-buckets").textContent()).toBe("1");

    // A file dropped on the upload form is chosen as if picked, then uploaded into it.
    const dropped = await page.evaluateHandle(() => {
      const transfer = new DataTransfer();
      transfer.items.add(new File(["dropped in\n"], "dropped.txt", { type: "text/plain" }));
      return transfer;
    });
    await page
      .getByRole("form", { name: "Upload files to reports" })
      .dispatchEvent("drop", { dataTransfer: dropped });
    await page.getByTestId("storage-chosen").filter({ hasText: "dropped.txt, 11 B" }).waitFor();
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    await page.getByRole("status").filter({ hasText: "dropped.txt uploaded." }).waitFor();
    await fileRow(page, "reports", "dropped.txt").filter({ hasText: "11 B" }).waitFor();
    await expect.poll(() => usage(page)).toEqual({ used: "11 B", files: "1", buckets: "1" });

    await name.fill("reports");
    await create.click();
    await expect.poll(() => name.getAttribute("aria-invalid")).toBe("true");
    expect(await page.locator(".field-error").textContent()).toMatch(/reports/);
    const state = await userApi.state();
    expect(state.buckets.data.map((bucket) => bucket.name)).toEqual(["reports"]);
    expect(await page.getByRole("table", { name: "Buckets" }).getByRole("row").count()).toBe(2);
    await screenshots(page, "storage-bucket-taken");
    await dashboard.close();
  });

  it("uploads several files through the file input (raw bodies, with progress, cancellable), lists each with its size and type, the usage follows, and downloads give back the same bytes under the same name", async () => {
    const user = await createUser(server(), { label: "storage-upload", plan: "plus" });
    const userApi = await api(user);
    const bucketId = await userApi.seed("inbox", []);
    const dashboard = await openStorage(user);
    const { page } = dashboard;
    await page.getByRole("heading", { name: "Files in inbox" }).waitFor();

    // What goes over the wire: one raw POST per file, its bytes as they are.
    const posts: { url: URL; type: string | null }[] = [];
    page.on("request", (request) => {
      if (request.method() === "POST" && request.url().includes("/v1/"))
        posts.push({ url: new URL(request.url()), type: request.headers()["content-type"] ?? null });
    });
    await page.getByLabel("Files to upload").setInputFiles([pdf, notes, data]);
    await page.getByTestId("storage-chosen").filter({ hasText: "3 files, 4.00 kB" }).waitFor();
    await page.getByRole("button", { name: "Upload 3 files" }).click();
    await page.getByRole("status").filter({ hasText: "3 files uploaded." }).waitFor();
    expect(
      posts.map((post) => [
        post.url.pathname.replace(/bkt_\w+/, "{bucket}"),
        post.url.searchParams.get("file_name"),
        post.url.searchParams.get("content_type"),
        post.type,
      ]),
    ).toEqual([
      ["/v1/buckets/{bucket}/objects", pdf.name, "application/pdf", "application/octet-stream"],
      ["/v1/buckets/{bucket}/objects", notes.name, "text/plain", "application/octet-stream"],
      ["/v1/buckets/{bucket}/objects", data.name, "application/json", "application/octet-stream"],
    ]);

    // Listed newest first, each with its type and size; the usage counts them.
    await expect.poll(() => filesTable(page, "inbox").getByRole("row").count()).toBe(4);
    const rows = await filesTable(page, "inbox")
      .getByRole("row")
      .evaluateAll((trs) =>
        trs.slice(1).map((tr) => [...tr.querySelectorAll("td")].slice(0, 3).map((td) => td.textContent)),
      );
    expect(rows).toEqual([
      [data.name, "application/json", "500 B"],
      [notes.name, "text/plain", "2.00 kB"],
      [pdf.name, "application/pdf", "1.50 kB"],
    ]);
    await expect.poll(() => usage(page)).toEqual({ used: "4.00 kB", files: "3", buckets: "1" });
    expect(await page.getByLabel("Files to upload").inputValue()).toBe("");
    // Stored byte for byte.
    expect((await userApi.state()).storageUsage).toEqual({ used_bytes: 4_000, object_count: 3 });
    const { files } = await userApi.gql<{ files: { data: { file_name: string; sha256: string }[] } }>(
      "query($id: ID!) { files(bucket_id: $id) { data { file_name sha256 } } }",
      {
        id: bucketId,
      },
    );
    expect(Object.fromEntries(files.data.map((file) => [file.file_name, file.sha256]))).toEqual(
      Object.fromEntries(
        [pdf, notes, data].map((file) => [file.name, createHash("sha256").update(file.buffer).digest("hex")]),
      ),
    );
    await screenshots(page, "storage-files");

    // Downloaded under its name, byte for byte.
    expect(await download(page, pdf.name)).toEqual({ name: pdf.name, bytes: pdf.buffer });
    expect(await download(page, data.name)).toEqual({ name: data.name, bytes: data.buffer });

    // The name search.
    await page.getByLabel("Search file names").fill("NOTES");
    await expect.poll(() => filesTable(page, "inbox").getByRole("row").count()).toBe(2);
    await fileRow(page, "inbox", notes.name).waitFor();
    await page.getByLabel("Search file names").fill("nothing-like-it");
    await page.getByText("No file name contains “nothing-like-it”.").waitFor();
    await page.getByLabel("Search file names").fill("");
    await expect.poll(() => filesTable(page, "inbox").getByRole("row").count()).toBe(4);

    // A slow link: the progress bar moves, and a cancelled upload leaves nothing.
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Network.enable");
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 200_000,
    });
    const big: Upload = {
      name: "big.bin",
      mimeType: "application/octet-stream",
      buffer: randomBytes(2_000_000),
    };
    await page.getByLabel("Files to upload").setInputFiles(big);
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    const progress = page.getByRole("progressbar", { name: "Uploading big.bin" });
    await expect
      .poll(async () => Number(await progress.getAttribute("value")), { timeout: 10_000 })
      .toBeGreaterThan(0);
    expect(Number(await progress.getAttribute("value"))).toBeLessThan(100);
    expect(await page.getByRole("button", { name: "Upload", exact: true }).getAttribute("aria-busy")).toBe(
      "true",
    );
    await screenshots(page, "storage-uploading");
    await page.getByRole("button", { name: "Cancel upload" }).click();
    await page
      .getByRole("alert")
      .filter({ hasText: "big.bin was not uploaded: Cancelled: nothing of it was stored." })
      .waitFor();
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    expect(await fileRow(page, "inbox", "big.bin").count()).toBe(0);
    await expect
      .poll(async () => (await userApi.state()).storageUsage)
      .toEqual({ used_bytes: 4_000, object_count: 3 });
    expect(await usage(page)).toEqual({ used: "4.00 kB", files: "3", buckets: "1" });
    await dashboard.close();
  });

  it("deletes a file after confirming; a bucket that still holds files is refused with the API's message, naming it; the emptied bucket is deleted", async () => {
    const user = await createUser(server(), { label: "storage-delete" });
    const userApi = await api(user);
    const bucketId = await userApi.seed("old-stuff", [notes]);
    const dashboard = await openStorage(user);
    const { page } = dashboard;
    await fileRow(page, "old-stuff", notes.name).waitFor();
    expect(await usage(page)).toEqual({ used: "2.00 kB", files: "1", buckets: "1" });

    // Not while it holds a file.
    dashboard.allowErrors(/status of 400/);
    await page.getByRole("button", { name: "Delete bucket old-stuff" }).click();
    const bucketDialog = page.getByRole("dialog", { name: "Delete bucket old-stuff?" });
    await bucketDialog.getByRole("button", { name: "Delete bucket" }).click();
    const refusal = bucketDialog.getByRole("alert");
    await refusal.waitFor();
    expect(await refusal.getAttribute("data-code")).toBe("invalid_state");
    // Named by its name, in plain words, once.
    expect(await refusal.locator(".banner-message").textContent()).toBe(
      "Bucket 'old-stuff' still holds 1 object: delete it first.",
    );
    expect(await refusal.textContent()).not.toContain(bucketId);
    expect(await page.getByText("still holds").count()).toBe(1);
    await screenshots(page, "storage-bucket-not-empty");
    await bucketDialog.getByRole("button", { name: "Cancel" }).click();
    expect(await page.getByRole("dialog").count()).toBe(0);

    // The file: a confirmation first; cancelled, nothing happens.
    await page.getByRole("button", { name: `Delete ${notes.name}`, exact: true }).click();
    const fileDialog = page.getByRole("dialog", { name: `Delete ${notes.name}?` });
    await fileDialog.getByText("freeing 2.00 kB").waitFor();
    await fileDialog.getByRole("button", { name: "Cancel" }).click();
    expect((await userApi.state()).storageUsage.object_count).toBe(1);
    await page.getByRole("button", { name: `Delete ${notes.name}`, exact: true }).click();
    await screenshots(page, "storage-delete-file");
    await fileDialog.getByRole("button", { name: "Delete file" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `${notes.name} deleted: 2.00 kB freed.` })
      .waitFor();
    await page.getByText("No files yet. Upload some above.").waitFor();
    await expect.poll(() => usage(page)).toEqual({ used: "0 B", files: "0", buckets: "1" });

    await page.getByRole("button", { name: "Delete bucket old-stuff" }).click();
    await bucketDialog.getByRole("button", { name: "Delete bucket" }).click();
    await page.getByRole("status").filter({ hasText: "Bucket old-stuff deleted." }).waitFor();
    await page.getByText("No buckets yet.").waitFor();
    expect(await page.getByRole("heading", { name: "Files in old-stuff" }).count()).toBe(0);
    await expect.poll(() => usage(page)).toEqual({ used: "0 B", files: "0", buckets: "0" });
    expect(await userApi.state()).toEqual({
      buckets: { data: [] },
      storageUsage: { used_bytes: 0, object_count: 0 },
    });
    await dashboard.close();
  });

  it("an upload past the quota is refused: by the API with storage_quota_exceeded, or before a byte is sent; nothing is listed", async () => {
    const user = await createUser(server(), { label: "storage-quota" });
    const userApi = await api(user);
    await userApi.seed("full", []);
    const quota = 1e9;
    // Nearly full (the counter the quota is checked against, set as if files were stored): 10 kB left.
    const fill = (left: number) =>
      server().running.db.prisma.workspace.update({
        where: { id: user.workspaceId },
        data: { storageBytes: BigInt(quota - left) },
      });
    await fill(10_000);
    const dashboard = await openStorage(user);
    const { page } = dashboard;
    await page.getByRole("heading", { name: "Files in full" }).waitFor();
    expect(await page.getByTestId("storage-free").textContent()).toBe("10.0 kB");
    await page.getByRole("note").filter({ hasText: "The quota is almost used up" }).waitFor();
    expect(await page.getByRole("meter", { name: "Storage used" }).getAttribute("value")).toBe(
      String(quota - 10_000),
    );

    // Meanwhile, somewhere else, the rest is used but 1 kB: the screen thinks 5 kB fit, the API refuses.
    await fill(1_000);
    const posts: string[] = [];
    page.on(
      "request",
      (request) =>
        void (request.method() === "POST" && request.url().includes("/v1/") && posts.push(request.url())),
    );
    dashboard.allowErrors(/status of 403/);
    const big: Upload = {
      name: "scan.bin",
      mimeType: "application/octet-stream",
      buffer: randomBytes(5_000),
    };
    await page.getByLabel("Files to upload").setInputFiles(big);
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    const refused = page.getByRole("alert").filter({ hasText: "scan.bin was not uploaded" });
    await refused.waitFor();
    expect(await refused.getAttribute("data-code")).toBe("storage_quota_exceeded");
    expect(await refused.textContent()).toContain(
      "The upload would take the workspace past its storage quota of 1 GB (1000 bytes left): delete objects or upgrade the plan.",
    );
    expect(await refused.textContent()).toMatch(/request req_/);
    expect(posts).toHaveLength(1);
    await page.getByText("No files yet. Upload some above.").waitFor();
    // The usage shown is brought up to date.
    await expect.poll(() => page.getByTestId("storage-free").textContent()).toBe("1.00 kB");
    await screenshots(page, "storage-quota-exceeded");

    // Now the screen knows: a file that cannot fit is refused before a byte is sent.
    await page.getByLabel("Files to upload").setInputFiles(big);
    await page.getByRole("button", { name: "Upload", exact: true }).click();
    const local = page.getByRole("alert").filter({ hasText: "nothing was sent" });
    await local.waitFor();
    expect(await local.getAttribute("data-code")).toBe("storage_quota_exceeded");
    expect(await local.textContent()).toContain(
      "scan.bin was not uploaded: It is 5.00 kB, and only 1.00 kB of the workspace's 1 GB storage quota is left",
    );
    expect(posts).toHaveLength(1);
    expect(await filesTable(page, "full").count()).toBe(0);
    expect((await userApi.state()).storageUsage).toEqual({ used_bytes: quota - 1_000, object_count: 0 });
    await dashboard.close();
  });

  describe("as a member", () => {
    it("sees the usage, buckets and files, downloads, uploads and deletes them: stored files are the business's, and a member writes them", async () => {
      const owner = await createUser(server(), {
        label: "storage-team",
        plan: "pro",
        workspaceName: "Shared Files",
      });
      const ownerApi = await api(owner);
      await ownerApi.seed("handbooks", [notes]);
      const member = await createUser(server(), { label: "storage-member" });
      await addMember(server(), owner, member, "member");
      const dashboard = await openStorage(member, "Shared Files (member)");
      const { page } = dashboard;
      await fileRow(page, "handbooks", notes.name).waitFor();
      expect(await usage(page)).toEqual({ used: "2.00 kB", files: "1", buckets: "1" });
      expect(await page.getByTestId("storage-limit").textContent()).toBe("100 GB");
      expect(await page.getByRole("note").count()).toBe(0);
      expect(await download(page, notes.name)).toEqual({ name: notes.name, bytes: notes.buffer });

      // Nothing is greyed out for the role (Upload waits only for files to be chosen).
      for (const label of ["Create bucket", "Delete bucket handbooks", `Delete ${notes.name}`]) {
        expect(
          await page.getByRole("button", { name: label, exact: true }).getAttribute("aria-disabled"),
          label,
        ).toBeNull();
      }
      expect(await page.getByLabel("Files to upload").isDisabled()).toBe(false);
      await page.getByLabel("Files to upload").setInputFiles(data);
      await page.getByRole("button", { name: "Upload", exact: true }).click();
      await fileRow(page, "handbooks", data.name).waitFor();
      await page.getByRole("button", { name: `Delete ${notes.name}`, exact: true }).click();
      await page
        .getByRole("dialog", { name: `Delete ${notes.name}?` })
        .getByRole("button", { name: "Delete file" })
        .click();
      await page
        .getByRole("status")
        .filter({ hasText: `${notes.name} deleted: 2.00 kB freed.` })
        .waitFor();
      await screenshots(page, "storage-member");

      const state = await ownerApi.state();
      expect(state.buckets.data.map((bucket) => bucket.name)).toEqual(["handbooks"]);
      expect(state.storageUsage).toEqual({ used_bytes: 500, object_count: 1 });
      await dashboard.close();
    });
  });
});
