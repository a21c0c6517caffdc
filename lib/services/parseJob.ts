import { ownValue } from '../domain/ownValue';
import type { JsonValue } from '../domain/json';
import { COST_UNIT, MAX_QUANTITY, type Costs } from '../domain/quota/tiers';
import type { UnitSettings } from '../domain/usage/unitSettings';
import type { Reservation } from '../domain/quota/ledger';
import type { JobEvent } from '../ports/Invoker';
import type { ReceivedMessage, SourceQueue } from '../ports/QueueReceiver';
import { deadLetterMarksOf } from './deadLetterMarks';

/**
 * What a received message that passed validation asks for. Its body is not here: it travels as the message's own
 * text (`ReceivedMessage.body`), since a parsed value would not give it back byte for byte.
 */
export interface ParsedJob {
  /**
   * The estimate of each named unit the lane counts, from the message attribute of the unit's name (Number) or the
   * unit's default; always with `cost` (attribute `cost`, default 1), the unit of the message contract.
   */
  readonly costs: Costs;
  /**
   * Attribute `idempotencyKey` (String), default the message id; for a dead letter moved back as it was (see
   * `deadLetterMarksOf`), the id of the message the service dead-lettered, which was its job's key.
   */
  readonly idempotencyKey: string;
  /**
   * 1 for a first try; a requeued message carries `attempt`; a FIFO retry counts its receives, an upper bound that
   * the worker refines with the attempts its key's record counts (see `attemptsSpent`). A dead letter moved
   * back as it was starts afresh at 1 (the `attempt` it carries is the one that failed last).
   */
  readonly attempt: number;
}

/**
 * The deepest nesting of arrays and objects a body may have. JSON.parse takes any depth (a 256 KB message can nest
 * 128 000 deep), but the API caller and the API behind it may parse the body with a recursive parser that fails on
 * such a body (Ruby's JSON refuses more than 100 levels by default) or overflows its stack, at every attempt. So the
 * orchestrator refuses it up front, with the reason. 100 is far beyond real API payloads.
 */
export const MAX_BODY_DEPTH = 100;

/** Whether `value` nests arrays and objects deeper than `limit`, found without recursion. */
function depthExceeds(value: JsonValue, limit: number): boolean {
  const stack: { value: JsonValue; depth: number }[] = [{ value, depth: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item.value !== 'object' || item.value === null) continue;
    const depth = item.depth + 1;
    if (depth > limit) return true;
    for (const child of Object.values(item.value)) stack.push({ value: child, depth });
  }
  return false;
}

/**
 * Characters a reason must not carry: control characters (C0, C1) and line separators, which break it over lines or
 * hide in a console, lone surrogate halves, which are not text at all (outside the characters SQS allows), and the
 * non-characters U+FFFE and U+FFFF.
 */
const UNPRINTABLE =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is matched
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `text` with each character of {@link UNPRINTABLE} written as a `\uXXXX` escape, e.g. where a reason quotes a body. */
function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Why a message cannot be dispatched, or the job it holds. */
export type ParseResult =
  { readonly ok: true; readonly job: ParsedJob } | { readonly ok: false; readonly reason: string };

/** The `cost` unit as the message contract has it: attribute `cost`, 1 when absent. */
const COST_DEFAULT = { default: 1 };

/**
 * Validates a received message against the message contract without trusting anything in it. A message that
 * fails is dead-lettered by the orchestrator with the returned reason, and never reaches the API. The body is parsed
 * only to be checked; what goes on is its text (see {@link jobEventOf}).
 * @param units the lane's named units (`ServiceConfig.units`): each unit's estimate is read from the attribute of its
 * name, or its default; a missing estimate without a default, or one that is not an integer from 0 to 1e12, fails.
 */
export function parseJob(message: ReceivedMessage, units: UnitSettings = {}): ParseResult {
  let body: JsonValue;
  try {
    body = JSON.parse(message.body) as JsonValue;
  } catch (error) {
    // The parser quotes the body, and may cut it inside a surrogate pair ("Unexpected token '\ud83d'…").
    return { ok: false, reason: `malformed: body is not JSON (${printable((error as Error).message)})` };
  }
  if (depthExceeds(body, MAX_BODY_DEPTH)) {
    return { ok: false, reason: `malformed: body nests arrays and objects deeper than ${MAX_BODY_DEPTH} levels` };
  }
  const { idempotencyKey: keyAttr, attempt: attemptAttr } = message.attributes;
  const costs: Record<string, number> = {};
  for (const [unit, setting] of Object.entries({ [COST_UNIT]: COST_DEFAULT, ...units })) {
    const attribute = ownValue(message.attributes, unit);
    if (attribute === undefined) {
      if (setting.default === undefined)
        return {
          ok: false,
          reason: `malformed: attribute '${unit}' is missing: the message must carry its estimate of the unit '${unit}', which has no default`,
        };
      costs[unit] = setting.default;
      continue;
    }
    const estimate = Number(attribute.value);
    if (
      !attribute.dataType.startsWith('Number') ||
      attribute.value.trim() === '' ||
      !Number.isInteger(estimate) ||
      estimate < 0 ||
      estimate > MAX_QUANTITY
    ) {
      return {
        ok: false,
        reason: `malformed: attribute '${unit}' must be a Number holding an integer from 0 to ${MAX_QUANTITY}; got ${attribute.dataType} ${printable(JSON.stringify(attribute.value.slice(0, 40)))}`,
      };
    }
    costs[unit] = estimate;
  }
  const redriven = deadLetterMarksOf(message.attributes);
  let idempotencyKey = redriven?.originalMessageId ?? message.messageId;
  if (keyAttr !== undefined) {
    if (!keyAttr.dataType.startsWith('String') || keyAttr.value.length === 0 || keyAttr.value.length > 512) {
      return {
        ok: false,
        reason: `malformed: attribute 'idempotencyKey' must be a String of 1 to 512 characters; got ${keyAttr.dataType} of length ${keyAttr.value.length}`,
      };
    }
    idempotencyKey = keyAttr.value;
  }
  if (message.queue === 'fifo' && message.groupId === undefined) {
    return { ok: false, reason: 'malformed: FIFO message without a MessageGroupId' };
  }
  const carried = attemptAttr === undefined || redriven !== undefined ? 1 : Number(attemptAttr.value);
  const attempt =
    message.queue === 'fifo' ? message.receiveCount : Number.isInteger(carried) && carried >= 1 ? carried : 1;
  return { ok: true, job: { costs, idempotencyKey, attempt } };
}

/**
 * The worker event for dispatching a parsed job received from one of the lane's source queues. It carries the
 * message's body as received, the text that {@link parseJob} checked, never a re-serialisation of the parsed value,
 * the call's slot (`reservation.at`), which the call must start by `callBy`, and when it was sent (`sentAt`).
 */
export function jobEventOf(
  lane: string,
  message: ReceivedMessage,
  job: ParsedJob,
  dispatchId: string,
  reservation: Reservation,
  callBy: number,
  sentAt: number,
): JobEvent {
  return {
    kind: 'job',
    lane,
    queue: message.queue as SourceQueue,
    receiptHandle: message.receiptHandle,
    messageId: message.messageId,
    body: message.body,
    attempt: job.attempt,
    cost: job.costs[COST_UNIT] ?? 1,
    idempotencyKey: job.idempotencyKey,
    ...(message.groupId === undefined ? {} : { groupId: message.groupId }),
    attributes: message.attributes,
    dispatchId,
    reservation,
    slotAt: reservation.at,
    callBy,
    sentAt,
  };
}
