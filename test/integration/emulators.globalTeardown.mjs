// Stops what emulators.globalSetup.mjs started: fauxqs, and dynalite or DynamoDB Local.
export default async function stopEmulators() {
  await globalThis.__QO_EMULATORS__?.stop();
}
