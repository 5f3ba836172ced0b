// Builds the console into dist/, which bc-server embeds (package web) and serves at /.
// The output is checked in and must stay byte-identical to a fresh build (test/run.sh checks).
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    // One script and one stylesheet; no inlined assets (the server's CSP allows only 'self').
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
