/** What fauxqs's inspection endpoint answers for one queue, as far as the bodies go. */
interface InspectedQueue {
  readonly messages?: {
    readonly ready?: readonly { readonly body?: string }[];
    readonly delayed?: readonly { readonly body?: string }[];
    readonly inflight?: readonly { readonly message?: { readonly body?: string } }[];
  };
}

/**
 * The bodies of every message the queues at `queueUrls` hold, waiting, delayed or in flight (received and not
 * deleted), one per message. SQS cannot list the messages in flight; fauxqs, the local stack's SQS, shows them all
 * at its inspection endpoint (`GET /_fauxqs/queues/<name>`), without receiving them or changing their visibility.
 * @param sqsEndpoint where fauxqs listens, e.g. `http://127.0.0.1:4566`.
 * @throws Error when the endpoint does not answer a queue's inspection.
 */
export async function heldBodies(sqsEndpoint: string, queueUrls: readonly string[]): Promise<string[]> {
  const inspected = await Promise.all(
    queueUrls.map(async (url) => {
      const name = url.slice(url.lastIndexOf('/') + 1);
      const response = await fetch(new URL(`/_fauxqs/queues/${encodeURIComponent(name)}`, sqsEndpoint));
      if (!response.ok) throw new Error(`inspecting queue ${name} at ${sqsEndpoint}: HTTP ${response.status}`);
      return (await response.json()) as InspectedQueue;
    }),
  );
  return inspected
    .flatMap(({ messages = {} }) => [
      ...(messages.ready ?? []).map((m) => m.body),
      ...(messages.delayed ?? []).map((m) => m.body),
      ...(messages.inflight ?? []).map((m) => m.message?.body),
    ])
    .filter((body): body is string => body !== undefined);
}
