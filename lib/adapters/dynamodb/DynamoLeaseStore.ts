import type { Lease, LeaseStore } from '../../ports/LeaseStore';
import {
  corrupt,
  DynamoTable,
  isFiniteNumber,
  laneKey,
  leaseLost,
  unlessConditionFails,
  type DynamoTableOptions,
  type Item,
} from './DynamoTable';

/**
 * The `LeaseStore` on the state table: the lease lives in the lane item (`lane#<lane>`) as `leaseOwner`,
 * `leaseToken` and `leaseExpiresAt` (epoch ms), beside the ledger and settlements of {@link DynamoLedgerStore}, whose
 * saves are fenced by `leaseToken`. See {@link DynamoTable} for the whole layout.
 */
export class DynamoLeaseStore implements LeaseStore {
  private readonly table: DynamoTable;

  constructor(options: DynamoTableOptions) {
    this.table = new DynamoTable(options);
  }

  /** @inheritDoc */
  async acquireLease(lane: string, owner: string, now: number, ttlMs: number): Promise<Lease | null> {
    // The lease held by A, as seen by an acquisition at `now`:
    //
    //   A acquires                A's leaseExpiresAt
    //   ────┬───────────────────────────┬──────────────────────▶ now
    //       │ held: B is refused,       │ expired: anyone may
    //       │ A itself may re-acquire   │ acquire
    //
    // attribute_not_exists(leaseOwner): never leased, or released. `ADD leaseToken` applies under the same
    // condition, so the token grows by one per acquisition; release keeps it, so it grows across releases too.
    const output = await unlessConditionFails(
      this.table.update({
        Key: laneKey(lane),
        UpdateExpression: 'ADD #leaseToken :one SET #leaseOwner = :owner, #leaseExpiresAt = :expiresAt',
        ConditionExpression: 'attribute_not_exists(#leaseOwner) OR #leaseExpiresAt <= :now OR #leaseOwner = :owner',
        ExpressionAttributeValues: { ':one': 1, ':owner': owner, ':expiresAt': now + ttlMs, ':now': now },
        ReturnValues: 'ALL_NEW',
      }),
      () => undefined,
    );
    if (output === undefined) return null;
    return { lane, owner, token: leaseTokenOf(output.Attributes, lane), expiresAt: now + ttlMs };
  }

  /** @inheritDoc */
  async renewLease(lease: Lease, now: number, ttlMs: number): Promise<Lease> {
    // A holds token 5. A renewal by A at any instant:
    //
    //   A acquires (5)          A's leaseExpiresAt       B acquires (6)
    //   ────┬─────────────────────────┬────────────────────────┬──────────▶ now
    //       │ renewed                 │ renewed (expired, but  │ LeaseLostError
    //       │                         │ nobody acquired since) │
    //
    // Expiry is not checked, only the token. `leaseOwner = :owner` fails once A has released (the owner is removed).
    await unlessConditionFails(
      this.table.update({
        Key: laneKey(lease.lane),
        UpdateExpression: 'SET #leaseExpiresAt = :expiresAt',
        ConditionExpression: '#leaseToken = :token AND #leaseOwner = :owner',
        ExpressionAttributeValues: { ':expiresAt': now + ttlMs, ':token': lease.token, ':owner': lease.owner },
      }),
      (cause) => leaseLost(lease.lane, lease.token, cause),
    );
    return { ...lease, expiresAt: now + ttlMs };
  }

  /** @inheritDoc */
  async releaseLease(lease: Lease): Promise<void> {
    // A stale holder's release changes nothing:
    //
    //   A acquires (5)      A's leaseExpiresAt     B acquires (6)      A releases (5)
    //   ────┬─────────────────────┬─────────────────────┬───────────────────┬──────▶
    //                                                                       refused: B keeps its lease
    //
    // A release removes the owner and the expiry but keeps `leaseToken`, so the next acquisition gets a greater token.
    await unlessConditionFails(
      this.table.update({
        Key: laneKey(lease.lane),
        UpdateExpression: 'REMOVE #leaseOwner, #leaseExpiresAt',
        ConditionExpression: '#leaseToken = :token',
        ExpressionAttributeValues: { ':token': lease.token },
      }),
      () => undefined,
    );
  }

  /**
   * {@inheritDoc LeaseStore.readLease}
   * @throws StateFormatError when a stored lease field is malformed.
   */
  async readLease(lane: string): Promise<Lease | null> {
    const item = await this.table.get({
      Key: laneKey(lane),
      ProjectionExpression: '#leaseOwner, #leaseToken, #leaseExpiresAt',
    });
    if (item?.leaseOwner === undefined) return null;
    const { leaseOwner: owner, leaseExpiresAt: expiresAt } = item;
    if (typeof owner !== 'string' || owner === '')
      throw corrupt(`leaseOwner of lane '${lane}'`, 'must be a non-empty string', owner);
    if (!isFiniteNumber(expiresAt))
      throw corrupt(`leaseExpiresAt of lane '${lane}'`, 'must be a number (epoch ms)', expiresAt);
    return { lane, owner, token: leaseTokenOf(item, lane), expiresAt };
  }
}

function leaseTokenOf(attributes: Item | undefined, lane: string): number {
  const token = attributes?.leaseToken;
  if (typeof token !== 'number' || !Number.isSafeInteger(token) || token < 1)
    throw corrupt(`leaseToken of lane '${lane}'`, 'must be a positive integer', token);
  return token;
}
