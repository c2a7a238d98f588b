import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/**
 * Built into dist/ and served by the Kontor server (server/dashboard/static.ts): index.html at
 * /dashboard/*, the hashed files under /dashboard/assets/ with a year's immutable cache.
 * Nothing is inlined into index.html: the page runs under `default-src 'self'`.
 */
/** `npm run dev`: Vite serves the app, and passes the API through to a running Kontor (KONTOR_URL). */
const api = process.env.KONTOR_URL ?? "http://127.0.0.1:4000";

export default defineConfig({
  base: "/dashboard/",
  plugins: [react()],
  server: {
    proxy: Object.fromEntries(
      ["/graphql", "/v1", "/dashboard/api", "/logo.svg"].map((path) => [
        path,
        { target: api, changeOrigin: false },
      ]),
    ),
  },
  build: {
    outDir: "dist",
    assetsDir: "assets",
    emptyOutDir: true,
    target: "es2022",
    // Every asset a file of its own: a data: URL would need the CSP to allow data:.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    // dist/.vite/manifest.json (never served): the bundle-budget test follows each screen's imports.
    manifest: true,
  },
});
