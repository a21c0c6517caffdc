// Stops what emulators.globalSetup.mjs started.
export default async function stopEmulators() {
  await globalThis.__QO_EMULATORS__?.stop();
}
