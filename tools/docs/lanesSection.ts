/**
 * The configuration reference's section on several lanes: the lanes form, a full example checked by packaging's own
 * code (`resolveQuotaSettings`), and what each lane gets (its queues' names, by `laneQueueName`).
 */
import { yamlParse } from 'yaml-cfn';
import { LANES_KEY, LANE_SETTING_KEYS, MAX_LANES, POOLS_KEY } from '../../lib/deploy/laneSettings';
import { SHARED_SETTING_KEYS } from '../../lib/lanes/laneEnv';
import { laneQueueName, UNPREFIXED_LANE } from '../../lib/lanes/laneQueueNames';
import { QUEUE_NAMES } from '../../lib/ports/QueueReceiver';
import { inWords } from './settingsTable';

/** The heading of the section. */
export const LANES_HEADING = 'Several lanes';

/**
 * The example as a user writes it in serverless.yml: two OpenAI models that share the organisation's token limit, an
 * Anthropic model and a plain API, one deployment. The version header is quoted: unquoted, YAML reads 2023-06-01 as
 * a date.
 */
export const LANES_EXAMPLE_YAML = `timeZone: UTC
pools:
  openai-org:
    quotas:
      - { limit: 50000, per: minute, unit: tokens }
    rateLimitScope: pool
lanes:
  default:
    quotas:
      - { limit: 10, per: second }
      - { limit: 400, per: minute }
    apiUrl: https://api.example.com/jobs
    healthUrl: https://api.example.com/health
  gpt-4o:
    quotas:
      - { limit: 500, per: minute }
      - { limit: 30000, per: minute, unit: tokens }
    usagePreset: openai
    units: { tokens: { default: 2000 } }
    pools: [{ name: openai-org, weight: 2 }]
    apiUrl: https://api.openai.com/v1/chat/completions
    healthUrl: https://api.openai.com/v1/models
    apiKeyParameter: /quota-orchestrator/prod/openai-key
  gpt-4o-mini:
    quotas:
      - { limit: 1000, per: minute }
      - { limit: 40000, per: minute, unit: tokens }
    usagePreset: openai
    units: { tokens: { default: 1000 } }
    pools: [openai-org]
    apiUrl: https://api.openai.com/v1/chat/completions
    healthUrl: https://api.openai.com/v1/models
    apiKeyParameter: /quota-orchestrator/prod/openai-key
  claude-sonnet:
    quotas:
      - { limit: 50, per: minute }
      - { limit: 8000, per: minute, unit: output_tokens }
    maxInFlight: 8
    usagePreset: anthropic
    units: { output_tokens: { default: 1024 } }
    apiUrl: https://api.anthropic.com/v1/messages
    healthUrl: https://api.anthropic.com/v1/models
    apiKeyHeader: x-api-key
    requestHeaders: { anthropic-version: '2023-06-01' }
    apiKeyParameter: /quota-orchestrator/prod/anthropic-key
`;

/**
 * The section's lines, the example first checked by `validate` (packaging's own check of `custom.quotaOrchestrator`).
 * @throws Error when the example no longer passes packaging.
 */
export function lanesSection(validate: (settings: Readonly<Record<string, unknown>>) => void): string[] {
  const example = yamlParse(LANES_EXAMPLE_YAML) as { readonly lanes: Readonly<Record<string, unknown>> };
  validate(example);
  const prefix = '<service>-<stage>-';
  const lanes = Object.keys(example.lanes);
  const queueRows = lanes.map(
    (lane) => `| \`${lane}\` | ${QUEUE_NAMES.map((queue) => `\`${laneQueueName(prefix, lane, queue)}\``).join(', ')} |`,
  );
  return [
    'One deployment can protect several APIs, each a *lane* with its own quota, circuit, retries, pacing, API and',
    `queues. Write them under \`${LANES_KEY}\` (1 to ${MAX_LANES}): at the top stay only the settings every lane shares,`,
    `${inWords(SHARED_SETTING_KEYS.map((key) => `\`${key}\``))}; each lane sets its own ${inWords(LANE_SETTING_KEYS.map((key) => `\`${key}\``))}`,
    'as a one-lane deployment sets them at the top, and packaging checks each lane as it checks one (a refusal names',
    'the lane: `custom.quotaOrchestrator.lanes.claude-sonnet.quotas[0].per: …`). A lane is named with 1 to 64 letters,',
    "digits, '-' or '_', short enough that its queue names fit SQS's 80 characters.",
    '',
    '```yaml',
    'custom:',
    '  quotaOrchestrator:',
    ...LANES_EXAMPLE_YAML.trimEnd()
      .split('\n')
      .map((line) => `    ${line}`),
    '```',
    '',
    'One orchestrator serves every lane: each minute, one invocation runs a run per lane side by side, each with its',
    "own lease, quota ledger and circuit, so a lane held by its quota, its open circuit, an operator's pause or an",
    'outage never delays another. A lane whose queues are all empty takes no lease and reads no state that minute: it',
    'costs three GetQueueAttributes calls a minute ($0.40 a million), about $0.05 a month. SQS counts a little behind,',
    'so a job sent to an idle lane may wait for the next minute. Each worker event names its lane, and the worker calls',
    "that lane's API with that lane's key and headers. The lanes share the orchestrator's CPU: with several busy lanes,",
    'give it more memory (`functions.orchestrator.memorySize`; 1769 MB is one vCPU). A run short of CPU dispatches',
    'fewer jobs, never more.',
    '',
    `**Pools.** A limit that several lanes share (an organisation's token limit across two models, an account's daily`,
    `budget) is written once, under \`${POOLS_KEY}\` at the top (\`{ <pool>: { quotas } }\`, tiers as a lane's), and each lane`,
    `that draws from it names it in its own \`${POOLS_KEY}\`. A dispatch then reserves in its lane and in every pool it names`,
    'at once, at a slot where all of them have room: no window of a lane or of a pool is ever exceeded, across crashes',
    "too (a pool's ledger is saved with an allowance before it is used, as a lane's is). Lanes that compete for a pool",
    'take turns by weight: a lane names a pool as `{ name, weight }` to give its weight (1 to 100, 1 by default), and',
    'while each has work, each gets a share of the pool in proportion to its weight (above, `gpt-4o` twice as much as',
    '`gpt-4o-mini`); what a lane cannot use (its own quota holds it, its circuit is open, its queues are empty) goes to',
    'the others. A pool that no',
    'lane names is refused, and so are pools in the one-lane form. Every lane of a pool dispatches as far ahead of its',
    'slots as the one whose workers start latest, so that they reserve in the pool in the order of their slots.',
    '',
    'A 429 pauses the lane that got it, until its Retry-After. A pool written with `rateLimitScope: pool` (a limit the',
    "provider counts across the lanes, as OpenAI counts an organisation's tokens across models) is paused whole",
    "instead: the worker writes the pause to the pool's item too, and no lane of the pool reserves in it until the",
    'pause ends (its run reads it at each flush of the pool, about every second).',
    '',
    "A pool's state is items of the lanes' table: `lane#pool:<pool>` (its lease and ledger, written by the orchestrator",
    "about once a second while a lane of the pool has work), `settle#pool:<pool>#<k>` (the workers' reports) and, with",
    '`rateLimitScope: pool`, `circuit#pool:<pool>` (its pause, read at each flush). A job of a lane costs one more',
    'settlement write per pool it draws from when its worker hands part of its estimate back or gives the reservation',
    "back (a job that used its estimate writes none there); the pool's flush, about once a second while one of its",
    'lanes has work, reads its shards once for all its lanes.',
    '',
    `Each lane has its eight queues. The lane named \`${UNPREFIXED_LANE}\` keeps the names of a one-lane deployment, so a`,
    `deployment that moves to \`${LANES_KEY}\` keeps its queues, the messages in them and its stored state by naming its`,
    `lane \`${UNPREFIXED_LANE}\` (and keeping \`lane\` unset). Another lane's queues carry its name; renaming or removing a`,
    'lane deletes its queues, with any message still in them, at the next deploy: drain it first.',
    '',
    '| Lane | Queues |',
    '| --- | --- |',
    ...queueRows,
    '',
    'Each lane also gets its own alarms (its dead-letter queues, its oldest message, its open circuit, its heartbeat),',
    'its queue URLs as stack outputs (`Gpt4oMainQueueUrl`, …), and its state items (`lane#<lane>`, `circuit#<lane>`,',
    "…) in the functions' grants; the worker may read each lane's key parameter. Producers send to a lane's queues",
    "(`enqueue` with that lane's queue URLs); operator commands take `--lane`.",
    '',
    "The settings travel to the functions in one variable, `LANES`, within Lambda's 4 KB of environment: packaging",
    'refuses lanes whose settings would not fit, and says how much room they would take.',
  ];
}
