import { tsImport } from 'tsx/esm/api';

export default async function teardown() {
  const { default: run } = await tsImport('./platform-teardown.ts', import.meta.url);
  await run();
}
