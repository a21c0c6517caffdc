// Stops what emulators.globalSetup.mjs started.
export default async function stopEmulators() {
  const { dynalite, sqs } = globalThis.__QO_EMULATORS__ ?? {};
  await sqs?.close();
  if (dynalite) await new Promise((resolve) => dynalite.close(resolve));
}
