/**
 * Vite build of the web console: React, served under /console (the base every asset URL starts
 * with). `npm run console:build` writes console/dist, which the local stack and the control
 * function serve (lib/http/console.ts). The output is not committed: it is rebuilt by
 * `npm start`, by the browser tests and by the CDK bundling, so it always matches the sources.
 * Issue 17.
 */
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/console/',
  plugins: [react()],
  logLevel: 'warn',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    sourcemap: false,
    reportCompressedSize: false,
  },
});
