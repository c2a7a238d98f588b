// `npm test` runs this first (pretest): the compliance suite drives GraphiQL in Debian's Chromium
// through playwright-core, which never downloads a browser. On a machine without it, install the
// Debian package when we may (root with apt-get); otherwise say what to install.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

const CHROMIUM = "/usr/bin/chromium";

if (!existsSync(CHROMIUM)) {
  const root = process.getuid?.() === 0;
  if (!root || !existsSync("/usr/bin/apt-get")) {
    console.error(
      `pretest: ${CHROMIUM} is missing. Install Debian's chromium package (apt-get install chromium), then run the tests again.`,
    );
    process.exit(1);
  }
  console.error("pretest: installing Debian's chromium (the GraphiQL browser test needs it)…");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  try {
    execFileSync("apt-get", ["install", "-y", "-qq", "chromium"], { stdio: "inherit", env });
  } catch {
    execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
    execFileSync("apt-get", ["install", "-y", "-qq", "chromium"], { stdio: "inherit", env });
  }
  if (!existsSync(CHROMIUM)) {
    console.error(`pretest: apt-get finished but ${CHROMIUM} is still missing.`);
    process.exit(1);
  }
}
