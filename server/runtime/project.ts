import { fileURLToPath } from "node:url";

/**
 * The repository's root folder, whether this module runs from source (`server/runtime/`) or
 * bundled into the production build (`dist/server/`, scripts/build-server.mjs): both sit two
 * folders below the root, so one relative URL serves both. The build keeps that depth for this reason.
 */
export const PROJECT_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The absolute path of a file shipped with the repository, for files read at run time.
 *
 * @example
 * readFileSync(projectPath("server/agents/auth.md"), "utf8");
 */
export const projectPath = (relative: string): string => PROJECT_ROOT + relative;
