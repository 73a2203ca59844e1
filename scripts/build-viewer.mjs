#!/usr/bin/env node
// Compiles the viewer's front end (viewer-app/: preact + htm) into dist/viewer-app/ with vite:
// one app.js with every dependency bundled (the viewer works offline; nothing from a CDN),
// beside index.html and app.css. `pairbench view` serves that directory.
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'dist', 'viewer-app');

await build({
  configFile: false,
  logLevel: 'warn',
  root: join(ROOT, 'viewer-app'),
  build: {
    outDir: OUT,
    emptyOutDir: true,
    copyPublicDir: false,
    target: 'es2022',
    rollupOptions: { input: join(ROOT, 'viewer-app', 'main.ts'), output: { entryFileNames: 'app.js', format: 'es' } },
  },
});
mkdirSync(OUT, { recursive: true });
for (const f of ['index.html', 'app.css']) copyFileSync(join(ROOT, 'viewer-app', f), join(OUT, f));
