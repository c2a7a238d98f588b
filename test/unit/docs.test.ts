import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * The documentation a newcomer navigates: a short README that points into docs/, links that all
 * resolve, a contract that cites only the project's own pages, and an architecture page that names
 * every folder of the tree.
 */

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** Files git would commit: tracked and new, not ignored, still on disk (a move lists its old path). */
function repositoryFiles(): string[] {
  const args = ["ls-files", "--cached", "--others", "--exclude-standard", "-z"];
  const out = execFileSync("git", args, { cwd: ROOT, encoding: "utf8" });
  return [...new Set(out.split("\0"))].filter(
    (file) => file && !file.split("/").includes("node_modules") && existsSync(join(ROOT, file)),
  );
}

const files = repositoryFiles();
const markdown = ["README.md", ...files.filter((file) => file.startsWith("docs/") && file.endsWith(".md"))];

/** Markdown outside fenced code blocks, where links and headings mean something. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = heading!
      .replace(/`/g, "")
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** Relative link targets of a Markdown file (external URLs and mail addresses left out). */
function relativeLinks(text: string): string[] {
  const bare = prose(text).replace(/`[^`\n]*`/g, "");
  const targets = [...bare.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
  return targets.filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe("the documentation", () => {
  it("keeps README.md to at most 200 lines", () => {
    const lines = readFileSync(join(ROOT, "README.md"), "utf8").trimEnd().split("\n").length;
    expect(lines).toBeLessThanOrEqual(200);
  });

  it("has every relative link of README.md and docs/ resolve, anchors included", () => {
    const broken: string[] = [];
    for (const file of markdown) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const link of relativeLinks(text)) {
        const [path, anchor] = link.split("#") as [string, string | undefined];
        // A bare `#anchor` points into the page itself.
        const target =
          path === "" ? join(ROOT, file) : resolve(ROOT, dirname(file), decodeURIComponent(path));
        if (!existsSync(target)) {
          broken.push(`${file}: ${link} (no file)`);
          continue;
        }
        const isPage = target.endsWith(".md") && statSync(target).isFile();
        if (anchor && isPage && !anchors(readFileSync(target, "utf8")).has(anchor)) {
          broken.push(`${file}: ${link} (no heading #${anchor} in ${relative(ROOT, target)})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("cites no document outside the repository", () => {
    // Spelled in pieces so that this file does not name them either.
    const outside = ["decisions", "api-spec"].map((name) => `${name}.md`);
    const citing: string[] = [];
    for (const file of files) {
      const bytes = readFileSync(join(ROOT, file));
      if (bytes.includes(0)) continue;
      const text = bytes.toString("utf8");
      for (const name of outside) if (text.includes(name)) citing.push(`${file}: ${name}`);
    }
    expect(citing).toEqual([]);
  });

  it("names every folder of the tree in docs/architecture.md", () => {
    const architecture = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
    const top = ["server", "schema", "sdk", "dashboard", "test", "bench", "scripts"];
    const folders = new Set<string>();
    for (const file of files) {
      const parts = file.split("/").slice(0, -1);
      if (!top.includes(parts[0] ?? "")) continue;
      // One migration is one folder: the migrations folder stands for them all.
      const end = parts.indexOf("migrations") + 1 || parts.length;
      for (let i = 1; i <= Math.min(end, parts.length); i++) folders.add(parts.slice(0, i).join("/"));
    }
    const missing = [...folders].filter((folder) => !architecture.includes(`${folder}/`)).sort();
    expect(missing).toEqual([]);
  });
});
