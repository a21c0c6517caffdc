import { arrivalTimes, parseArrivals } from '../../../tools/simulation/arrivals';
import { ConfigError } from '../../../lib/errors';

describe('arrivals', () => {
  it('sends jobs phase after phase at each rate, in whole ms, and goes on at the last rate', () => {
    const phases = [
      { perSecond: 2, forSeconds: 1 },
      { perSecond: 3, forSeconds: 1 },
    ];
    expect(arrivalTimes(7, phases)).toEqual([0, 500, 1000, 1333, 1667, 2000, 2333]);
  });

  it('reads a list of phases, and refuses anything else naming the field', () => {
    expect(parseArrivals(undefined)).toBeUndefined();
    expect(parseArrivals([{ perSecond: 5, forSeconds: 2 }])).toEqual([{ perSecond: 5, forSeconds: 2 }]);
    expect(() => parseArrivals([])).toThrow(ConfigError);
    expect(() => parseArrivals([{ perSecond: 5 }])).toThrow('jobs.arrivals[0].forSeconds: is required');
    expect(() => parseArrivals([{ perSecond: -1, forSeconds: 2 }])).toThrow('jobs.arrivals[0].perSecond: must be');
  });
});
