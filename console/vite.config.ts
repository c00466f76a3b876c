/**
 * Vite build of the web console: React, served under /console (the base every asset URL starts
 * with). `npm run console:build` writes console/dist, which the local stack and the control
 * function serve (lib/http/console.ts). The output is not committed: it is rebuilt by
 * `npm start`, by the browser tests and by the CDK bundling, so it always matches the sources.
 * Each script and style sheet is also written compressed beside itself (`.br`, `.gz`), which the
 * console's server sends as they are instead of compressing the bundle on every cold load
 * (lib/http/console.ts, `precompressed`). Issue 17; issue 27 point 5.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import react from '@vitejs/plugin-react';
import { defineConfig, type Plugin } from 'vite';

/** Writes `name.br` and `name.gz` beside every .js, .css and .svg file of the build's assets/. */
function precompress(): Plugin {
  let outDir = '';
  return {
    name: 'agent-runs-precompress',
    apply: 'build',
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir);
    },
    closeBundle() {
      const assets = join(outDir, 'assets');
      for (const name of readdirSync(assets)) {
        if (!/\.(js|css|svg)$/.test(name)) continue;
        const bytes = readFileSync(join(assets, name));
        writeFileSync(
          join(assets, `${name}.br`),
          brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
        );
        writeFileSync(join(assets, `${name}.gz`), gzipSync(bytes, { level: 9 }));
      }
    },
  };
}

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  plugins: [react(), precompress()],
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
});
