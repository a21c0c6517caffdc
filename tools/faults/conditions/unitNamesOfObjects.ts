import { parseServiceConfig } from '../../../lib/config';
import type { ConditionCheck, ConditionScenario } from './types';

/** Unit names that every JavaScript object has as a property (its own or its prototype's). */
const OBJECT_MEMBERS = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

/** A configuration with one tier counted in `unit`. */
function configWithUnit(unit: string): unknown {
  return {
    lane: 'api',
    quotas: [
      { limit: 5, per: 'second' },
      { limit: 1_000, per: 'minute', unit },
    ],
  };
}

/** Whether the configuration with `unit` is refused at start-up with an error that names the unit. */
function refused(unit: string): boolean {
  try {
    parseServiceConfig(configWithUnit(unit));
    return false;
  } catch (error) {
    return error instanceof Error && error.message.includes(unit);
  }
}

/** Condition 9: a unit named after a member of `Object.prototype`. */
export const unitNamesOfObjects: ConditionScenario = {
  name: 'unit-named-like-object-members',
  condition: 9,
  injects: `tiers counted in units named ${OBJECT_MEMBERS.join(', ')}`,
  breaks:
    "such a name passes validation; a message without the attribute then crashes the orchestrator's parser, workers crash after every answer, and a __proto__ tier is never enforced",
  async run(): Promise<ConditionCheck> {
    const accepted = OBJECT_MEMBERS.filter((unit) => !refused(unit));
    return {
      held: accepted.length === 0,
      detail:
        accepted.length === 0
          ? `all ${OBJECT_MEMBERS.length} names refused at start-up, each named in the error`
          : `accepted at start-up: ${accepted.join(', ')}`,
    };
  },
};
