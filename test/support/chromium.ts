import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

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
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/**
 * One Chromium for the tests of a file (or a describe block): launched before them, closed after.
 * Returns its getter, usable inside tests and hooks.
 */
export function useChromium(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error("Chromium is not running: use the browser inside a test or a hook.");
    return browser;
  };
}
