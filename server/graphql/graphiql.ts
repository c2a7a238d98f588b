import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, extname, join, resolve, sep } from "node:path";
import { type GraphiQLOptions, type Plugin, renderGraphiQL } from "graphql-yoga";

const ASSET_PATH = "/graphiql/";
const CDN = /https:\/\/unpkg\.com\/@graphql-yoga\/graphiql@[^/]+\/dist\//g;
const FAVICON = /<link rel=icon href=[^>]*>/;
const ASSETS_DIR = join(
  dirname(createRequire(import.meta.url).resolve("@graphql-yoga/graphiql/package.json")),
  "dist",
);
const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

/** Yoga's GraphiQL page, pointed at copies of its assets served from this server (no CDN). */
export function renderLocalGraphiQL(options: GraphiQLOptions): string {
  // Yoga's page reads the initial query from `query` (after `?query=`), not from `defaultQuery`.
  const withQuery = { ...options, query: options.defaultQuery } as GraphiQLOptions;
  // Yoga fills only the first __TITLE__ (the <title>), leaving "Loading __TITLE__..." on the page.
  return renderGraphiQL(withQuery)
    .replaceAll("__TITLE__", escapeHtml(options.title ?? "GraphiQL"))
    .replace(CDN, ASSET_PATH)
    .replace(FAVICON, "");
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!,
  );

function decodeSafely(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

/** Serves the GraphiQL bundle from the installed @graphql-yoga/graphiql package. */
export function useGraphiQLAssets(): Plugin {
  return {
    async onRequest({ url, endResponse }) {
      if (!url.pathname.startsWith(ASSET_PATH)) return;
      const name = decodeSafely(url.pathname.slice(ASSET_PATH.length));
      if (name === undefined) return; // `%zz` names no asset: the 404 of any unknown path
      const file = resolve(ASSETS_DIR, name);
      const type = TYPES[extname(file)];
      if (!type || !file.startsWith(`${ASSETS_DIR}${sep}`)) return;
      const body = await readFile(file).catch(() => null);
      if (body)
        endResponse(
          new Response(body, { headers: { "Content-Type": type, "Cache-Control": "public, max-age=86400" } }),
        );
    },
  };
}
