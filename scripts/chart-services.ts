/**
 * Writes deploy/k8s/platform/services.json from the service registry (services/registry.ts):
 * the services the Helm chart deploys (those with code) and their default ports. Run by
 * `npm run generate`; services/registry.test.ts fails when the file is stale.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { chartServices } from '../services/registry.js';

const ROOT = path.resolve(import.meta.dirname, '..');
writeFileSync(path.join(ROOT, 'deploy/k8s/platform/services.json'), `${JSON.stringify(chartServices(), null, 2)}\n`);
