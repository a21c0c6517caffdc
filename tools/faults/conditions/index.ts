import { deployAddsTierOrCap } from './deployAddsTierOrCap';
import { providerKeepsEstimate } from './providerKeepsEstimate';
import type { ConditionScenario } from './types';
import { unitNamesOfObjects } from './unitNamesOfObjects';

/** Every condition scenario, in the order of their conditions. */
export const conditionScenarios: readonly ConditionScenario[] = [
  unitNamesOfObjects,
  deployAddsTierOrCap,
  providerKeepsEstimate,
].sort((a, b) => a.condition - b.condition);

export type { ConditionCheck, ConditionScenario } from './types';
