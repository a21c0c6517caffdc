import { deployAddsTierOrCap } from './deployAddsTierOrCap';
import { fifoRetriesKeepAttempts } from './fifoRetriesKeepAttempts';
import { hotLaneItems } from './hotLaneItems';
import { keyReadAfterCheck } from './keyReadAfterCheck';
import { providerKeepsEstimate } from './providerKeepsEstimate';
import { copiesOutliveRecord } from './copiesOutliveRecord';
import { lateRepeatOfCalledDispatch } from './lateRepeatOfCalledDispatch';
import { refundedDispatchDeliveredAgain } from './refundedDispatchDeliveredAgain';
import { settlementRecordedTwice } from './settlementRecordedTwice';
import { retryAfterBindsCallsNotSent } from './retryAfterBindsCallsNotSent';
import { revokedKeyPublicHealth } from './revokedKeyPublicHealth';
import { slowKeyProbe } from './slowKeyProbe';
import type { ConditionScenario } from './types';
import { unitNamesOfObjects } from './unitNamesOfObjects';

/** Every condition scenario, in the order of their conditions. */
export const conditionScenarios: readonly ConditionScenario[] = [
  refundedDispatchDeliveredAgain,
  lateRepeatOfCalledDispatch,
  unitNamesOfObjects,
  deployAddsTierOrCap,
  copiesOutliveRecord,
  providerKeepsEstimate,
  keyReadAfterCheck,
  slowKeyProbe,
  settlementRecordedTwice,
  fifoRetriesKeepAttempts,
  revokedKeyPublicHealth,
  retryAfterBindsCallsNotSent,
  hotLaneItems,
].sort((a, b) => a.condition - b.condition);

export type { ConditionCheck, ConditionScenario } from './types';
