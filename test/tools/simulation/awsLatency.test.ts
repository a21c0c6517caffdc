import { ConfigError } from '../../../lib/errors';
import { FakeClock } from '../../../tools/memory/FakeClock';
import { AWS_LATENCY, parseAwsLatency, withLatency } from '../../../tools/simulation/awsLatency';
import { thrown } from '../../helpers/thrown';

/** A port whose one method answers at once, and a plain property. */
class Port {
  readonly name = 'port';
  calls = 0;
  async answer(n: number): Promise<number> {
    this.calls++;
    return n * 2;
  }
}

describe('withLatency', () => {
  it('makes every method call answer the latency later on the clock, and counts it by prefix and method', async () => {
    const clock = new FakeClock(0);
    const port = new Port();
    const counts = new Map<string, number>();
    const slow = withLatency(port, clock, 15, { prefix: 'lambda', counts });

    const answer = slow.answer(21);
    await clock.advance(14);
    expect(port.calls).toBe(0);
    await clock.advance(1);
    await expect(answer).resolves.toBe(42);
    expect(slow.name).toBe('port');
    expect(counts).toEqual(new Map([['lambda.answer', 1]]));
  });

  it('waits whole milliseconds, as Date.now() counts them: a measured mean of 81.8 ms answers at 82', async () => {
    const clock = new FakeClock(0);
    const port = new Port();
    const slow = withLatency(port, clock, 81.8);

    const answer = slow.answer(1);
    await clock.advance(81);
    expect(port.calls).toBe(0);
    await clock.advance(1);
    await expect(answer).resolves.toBe(2);
    expect(clock.now()).toBe(82);
  });

  it('leaves a port with no latency and nothing to count as it is', () => {
    const port = new Port();
    expect(withLatency(port, new FakeClock(0), 0)).toBe(port);
  });
});

describe('parseAwsLatency', () => {
  it('reads a profile, missing services at 0, and refuses a latency out of range naming it', () => {
    expect(parseAwsLatency({ lambdaMs: 15, dynamodbMs: 4, sqsMs: 10 })).toEqual(AWS_LATENCY);
    expect(parseAwsLatency({ sqsMs: 10 })).toEqual({ lambdaMs: 0, dynamodbMs: 0, sqsMs: 10 });
    expect(thrown(ConfigError, () => parseAwsLatency({ sqsMs: -1 })).message).toBe(
      'awsLatency.sqsMs: must be a number from 0 to 10000; got -1',
    );
  });
});
