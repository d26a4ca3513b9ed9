import { defineConfig } from 'vite';

// The viewer is built into dist/web, beside the compiled server that serves it.
export default defineConfig({
  root: 'web',
  base: './',
  build: { outDir: '../dist/web', emptyOutDir: true, chunkSizeWarningLimit: 1024 },
  server: { proxy: { '/api': { target: 'http://127.0.0.1:8470', ws: true } } },
});
