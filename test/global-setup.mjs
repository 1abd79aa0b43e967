// Jest loads global setup outside its ESM transform; tsx loads the TypeScript.
import { tsImport } from 'tsx/esm/api';

export default async function setup() {
  const { default: run } = await tsImport('./platform-setup.ts', import.meta.url);
  await run();
}
