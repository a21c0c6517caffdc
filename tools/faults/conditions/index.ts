import { deployAddsTierOrCap } from './deployAddsTierOrCap';
import { keyReadAfterCheck } from './keyReadAfterCheck';
import { providerKeepsEstimate } from './providerKeepsEstimate';
import { slowKeyProbe } from './slowKeyProbe';
import type { ConditionScenario } from './types';
import { unitNamesOfObjects } from './unitNamesOfObjects';

/** Every condition scenario, in the order of their conditions. */
export const conditionScenarios: readonly ConditionScenario[] = [
  unitNamesOfObjects,
  deployAddsTierOrCap,
  providerKeepsEstimate,
  keyReadAfterCheck,
  slowKeyProbe,
].sort((a, b) => a.condition - b.condition);

export type { ConditionCheck, ConditionScenario } from './types';
