// Writes the console bundle to apps/console/dist (the container image serves it from there; a development
// checkout does not need it: the gateway builds the bundle in memory on the first request to /app).
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildConsole, CONSOLE_DIR } from '../services/gateway/src/routes/console.js';

const dist = path.join(CONSOLE_DIR, 'dist');
const assets = await buildConsole();
mkdirSync(dist, { recursive: true });
for (const [name, asset] of assets) if (name !== 'index.html') writeFileSync(path.join(dist, name), asset.body);
console.log(`console bundle written to ${dist}: ${[...assets.keys()].filter((n) => n !== 'index.html').join(', ')}`);
