import { checkAlarmSettings } from '../../../lib/deploy/alarmSettings';
import { ConfigError } from '../../../lib/errors';
import { thrown } from '../../helpers/thrown';

describe('checkAlarmSettings', () => {
  const alarms = { email: '', oldestMessageAgeSeconds: 86_400, circuitOpenMinutes: 15 };

  it('accepts the settings of serverless.yml, and an email address', () => {
    expect(checkAlarmSettings(alarms)).toEqual(alarms);
    expect(checkAlarmSettings({ ...alarms, email: 'ops@example.com' }).email).toBe('ops@example.com');
  });

  it.each([
    [
      { ...alarms, email: 'ops' },
      'custom.alarms.email: must be an email address such as ops@example.com, or \'\' for no subscription; got "ops"',
    ],
    [
      { ...alarms, oldestMessageAgeSeconds: 345_600 },
      'custom.alarms.oldestMessageAgeSeconds: must be a whole number from 60 to 345599; got 345600',
    ],
    [
      { ...alarms, oldestMessageAgeSeconds: 59 },
      'custom.alarms.oldestMessageAgeSeconds: must be a whole number from 60 to 345599; got 59',
    ],
    [
      { ...alarms, circuitOpenMinutes: 0 },
      'custom.alarms.circuitOpenMinutes: must be a whole number from 1 to 1440; got 0',
    ],
    [
      { ...alarms, circuitOpenMinutes: undefined },
      'custom.alarms.circuitOpenMinutes: must be a whole number from 1 to 1440; got nothing',
    ],
    [
      { ...alarms, sms: '+1555' },
      'custom.alarms.sms: unknown key; allowed keys are email, oldestMessageAgeSeconds, circuitOpenMinutes',
    ],
    [
      'yes',
      'custom.alarms: must be an object with keys email, oldestMessageAgeSeconds and circuitOpenMinutes; got "yes"',
    ],
  ])('refuses %p, naming the field and its range', (value, message) => {
    expect(thrown(ConfigError, () => checkAlarmSettings(value)).message).toBe(message);
  });
});
