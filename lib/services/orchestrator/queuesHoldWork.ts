import { READ_ORDER, type QueueReceiver } from '../../ports/QueueReceiver';

/**
 * Whether a lane's source queues hold any work (a message visible, in flight or delayed), asked before its run takes
 * the lease in a deployment of several lanes: a lane with none then costs three GetQueueAttributes a run and no state
 * read or write. SQS counts a little behind, so a message sent a moment ago may wait for the next tick. A count
 * that fails answers true: the run goes ahead, as it would without the question.
 */
export async function queuesHoldWork(queues: Pick<QueueReceiver, 'messageCount'>): Promise<boolean> {
  for (const queue of READ_ORDER) {
    const held = await queues.messageCount(queue).catch(() => 1);
    if (held > 0) return true;
  }
  return false;
}
