import { ownValue } from '../domain/ownValue';
import { ATTRIBUTES, type MessageAttribute } from '../ports/QueueReceiver';

type Attributes = Readonly<Record<string, MessageAttribute>>;

/**
 * The attributes the service writes on a message it sends to a dead-letter queue and on no other (see `deadLetter`):
 * the reason, the source queue, the id of the message it was, the dispatch that called and the API's answer. The
 * attempt is not one of them: a requeued copy carries it too.
 */
export const DEAD_LETTER_ATTRIBUTES: readonly string[] = [
  ATTRIBUTES.reason,
  ATTRIBUTES.sourceQueue,
  ATTRIBUTES.originalMessageId,
  ATTRIBUTES.dispatchId,
  ATTRIBUTES.apiError,
];

/** What a dead letter the service wrote says of the job it ended. */
export interface DeadLetterMarks {
  /** The id of the message the service dead-lettered: the job's key, when it had no `idempotencyKey` attribute. */
  readonly originalMessageId: string;
  /** The dispatch whose call ended the job; absent when the orchestrator dead-lettered it without a dispatch. */
  readonly dispatchId?: string;
}

/** `attributes[name]` when it is a String of 1 to 512 characters (an idempotency key's bounds). */
function text(attributes: Attributes, name: string): string | undefined {
  const attribute = ownValue(attributes, name);
  if (attribute === undefined || !attribute.dataType.startsWith('String')) return undefined;
  return attribute.value.length >= 1 && attribute.value.length <= 512 ? attribute.value : undefined;
}

/**
 * The dead-letter marks of a message received from a source queue, when it carries the three that the service writes
 * on every dead letter (`reason`, `sourceQueue`, `originalMessageId`). Such a message is a dead letter an operator
 * moved back as it was, attributes and all (the SQS console's redrive, `StartMessageMoveTask`): the service never
 * sends them to a source queue, and a requeued copy drops them (see {@link withoutDeadLetterMarks}). It is a redrive,
 * as `ops redrive` makes one: the job starts its attempts afresh, and its key is reopened if the dead-lettering it
 * names still holds it.
 */
export function deadLetterMarksOf(attributes: Attributes): DeadLetterMarks | undefined {
  const originalMessageId = text(attributes, ATTRIBUTES.originalMessageId);
  if (originalMessageId === undefined) return undefined;
  if (text(attributes, ATTRIBUTES.reason) === undefined || text(attributes, ATTRIBUTES.sourceQueue) === undefined)
    return undefined;
  const dispatchId = text(attributes, ATTRIBUTES.dispatchId);
  return { originalMessageId, ...(dispatchId === undefined ? {} : { dispatchId }) };
}

/** `attributes` without those of {@link DEAD_LETTER_ATTRIBUTES}. */
export function withoutDeadLetterMarks(attributes: Attributes): Record<string, MessageAttribute> {
  return Object.fromEntries(Object.entries(attributes).filter(([name]) => !DEAD_LETTER_ATTRIBUTES.includes(name)));
}
