import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

/** Debian's Chromium: `npm test` installs it first when it is missing (scripts/ensure-chromium.ts). */
export const CHROMIUM = "/usr/bin/chromium";

/**
 * Headless Chromium, waiting (bounded) for the package another process may still be installing.
 * The flags keep it off the network it cannot reach here (updates, sync, field trials).
 */
export async function launchChromium(): Promise<Browser> {
  const deadline = Date.now() + 60_000;
  while (!existsSync(CHROMIUM) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1_000));
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
}
