import { faultScenarios } from '../../../tools/faults/scenarios';
import { conditionScenarios } from '../../../tools/faults/conditions';

describe('the fault suite’s condition scenarios', () => {
  it('have names of their own, apart from the emulator scenarios', () => {
    const names = [...faultScenarios('full'), ...conditionScenarios].map((s) => s.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(conditionScenarios.map((s) => [s.condition, s.name, s] as const))(
    'condition %i (%s): the service survives it',
    async (_condition, _name, scenario) => {
      const check = await scenario.run();
      expect(check).toEqual({ held: true, detail: expect.any(String) });
    },
    // hot-lane-items plays 4,000 settlements on dynalite.
    120_000,
  );
});
