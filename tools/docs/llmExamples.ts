/**
 * The configuration reference's worked examples: an Anthropic lane and an OpenAI lane, end to end. The settings, the
 * job and the answer are written here; what the job reserves, what the worker reads from the answer and what goes
 * back are computed with the service's own code (`parseServiceConfig`, `parseJob`, `readUsage`, `countedUsage`,
 * `handedBack`), and the
 * YAML shown is parsed back and checked, so an example that no longer holds fails the build of the reference.
 */
import { isDeepStrictEqual } from 'node:util';
import { yamlParse } from 'yaml-cfn';
import { parseServiceConfig } from '../../lib/config';
import { handedBack } from '../../lib/domain/quota/handBack';
import { countedUsage, usageSourcesOf } from '../../lib/domain/usage/unitSettings';
import { readUsage } from '../../lib/domain/usage/usageSources';
import { parseJob } from '../../lib/services/parseJob';
import { inWords } from './settingsTable';

/** A message attribute a producer sets, with what it is set to. */
interface ExampleAttribute {
  readonly name: string;
  readonly value: number;
  readonly setTo: string;
}

/** One worked example: a provider's limits as a lane's settings, one job, and the provider's answer to it. */
export interface LlmExample {
  readonly title: string;
  /** Paragraphs before the settings. */
  readonly intro: readonly string[];
  /** The worker's timeout (`functions.worker.timeout`), in seconds: an LLM's answer takes seconds to minutes. */
  readonly workerTimeoutSeconds: number;
  /** The example's `custom.quotaOrchestrator`, the endpoints included. */
  readonly settings: Readonly<Record<string, unknown>>;
  /** The keys of {@link LlmExample.settings} that only serverless.yml has (not `parseServiceConfig`'s). */
  readonly deployKeys: readonly string[];
  /** The job's body: the provider's request, sent as it is. */
  readonly body: Readonly<Record<string, unknown>>;
  readonly attributes: readonly ExampleAttribute[];
  /** The provider's answer's body, as far as usage goes. */
  readonly answer: Readonly<Record<string, unknown>>;
  /** Paragraphs after the answer. */
  readonly outro: readonly string[];
}

/** The job of both examples: a prompt of this many tokens… */
const PROMPT_TOKENS = 812;
/** …allowed this many output tokens… */
const MAX_TOKENS = 1024;
/** …of which the answer used this many. */
const OUTPUT_TOKENS = 311;

const MESSAGES = [{ role: 'user', content: '…' }];

/** The worker's timeout of both examples, in seconds, and the timings that must grow with it. */
const WORKER_TIMEOUT_SECONDS = 120;
const LONG_CALLS = {
  apiTimeoutMs: 100_000,
  circuit: { healthCheckTimeoutSeconds: 110 },
  orchestrator: { visibilityTimeoutMs: 240_000 },
};

/** The examples, in the order the reference shows them. */
export const LLM_EXAMPLES: readonly LlmExample[] = [
  {
    title: 'Anthropic (Messages API)',
    intro: [
      'Anthropic limits requests, input tokens and output tokens per minute, each on its own. One tier per limit, the',
      "preset for the answer's `usage`, and a cap on calls in progress. The numbers are an example: take yours from",
      'the limits of your organisation and model.',
    ],
    workerTimeoutSeconds: WORKER_TIMEOUT_SECONDS,
    settings: {
      apiUrl: 'https://api.anthropic.com/v1/messages',
      healthUrl: 'https://api.anthropic.com/v1/models',
      apiKeyHeader: 'x-api-key',
      requestHeaders: { 'anthropic-version': '2023-06-01' },
      quotas: [
        { limit: 1000, per: 'minute' },
        { limit: 450000, per: 'minute', unit: 'input_tokens' },
        { limit: 90000, per: 'minute', unit: 'output_tokens' },
      ],
      maxInFlight: 50,
      usagePreset: 'anthropic',
      ...LONG_CALLS,
    },
    deployKeys: ['apiUrl', 'healthUrl', 'apiKeyHeader', 'requestHeaders', 'apiTimeoutMs'],
    body: { model: '…', max_tokens: MAX_TOKENS, messages: MESSAGES },
    attributes: [
      {
        name: 'input_tokens',
        value: PROMPT_TOKENS,
        setTo: "the prompt's token count (Anthropic's token-counting endpoint gives it)",
      },
      { name: 'output_tokens', value: MAX_TOKENS, setTo: "the request's `max_tokens`: the most the answer can use" },
    ],
    answer: {
      id: 'msg_…',
      type: 'message',
      usage: {
        input_tokens: PROMPT_TOKENS,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: OUTPUT_TOKENS,
      },
    },
    outro: [
      "Anthropic's API takes the key alone in an `x-api-key` header, and wants an `anthropic-version` header on every",
      'request: `apiKeyHeader` and `requestHeaders` say so, and the worker sends the key from the SSM parameter',
      '`apiKeyParameter` that way, to the health URL too. Quote the version, or YAML reads it as a date.',
    ],
  },
  {
    title: 'OpenAI (Chat Completions)',
    intro: [
      'OpenAI limits requests and tokens (prompt and completion together) per minute. One tier per limit, the preset',
      "for the answer's `usage`, and a cap on calls in progress. The numbers are an example: take yours from the",
      'limits of your organisation and model.',
    ],
    workerTimeoutSeconds: WORKER_TIMEOUT_SECONDS,
    settings: {
      apiUrl: 'https://api.openai.com/v1/chat/completions',
      healthUrl: 'https://api.openai.com/v1/models',
      quotas: [
        { limit: 5000, per: 'minute' },
        { limit: 800000, per: 'minute', unit: 'tokens' },
      ],
      maxInFlight: 100,
      usagePreset: 'openai',
      ...LONG_CALLS,
    },
    deployKeys: ['apiUrl', 'healthUrl', 'apiTimeoutMs'],
    body: { model: '…', max_completion_tokens: MAX_TOKENS, messages: MESSAGES },
    attributes: [
      {
        name: 'tokens',
        value: PROMPT_TOKENS + MAX_TOKENS,
        setTo: "the prompt's token count plus the request's `max_completion_tokens` (or `max_tokens`)",
      },
    ],
    answer: {
      id: 'chatcmpl-…',
      object: 'chat.completion',
      usage: {
        prompt_tokens: PROMPT_TOKENS,
        completion_tokens: OUTPUT_TOKENS,
        total_tokens: PROMPT_TOKENS + OUTPUT_TOKENS,
      },
    },
    outro: [
      'The example worker sends the API key from the SSM parameter `apiKeyParameter` as `authorization: Bearer <key>`,',
      'as OpenAI expects.',
    ],
  },
];

/** A YAML scalar as serverless.yml would write it: quoted where YAML would read a number or a date. */
function scalar(value: unknown): string {
  return typeof value === 'string' && /^[\w./:-]+$/.test(value) && !/^[\d.:-]+$/.test(value)
    ? value
    : JSON.stringify(value);
}

/** A flat object as a YAML flow mapping: `{ limit: 10, per: second }`. */
function flow(value: Readonly<Record<string, unknown>>): string {
  return `{ ${Object.entries(value)
    .map(([k, v]) => `${k}: ${scalar(v)}`)
    .join(', ')} }`;
}

/** The example's serverless.yml, as far as it sets anything: the worker's timeout, and its settings (lists one item a line). */
function yamlOf({ workerTimeoutSeconds, settings }: LlmExample): string[] {
  const lines = [
    'functions:',
    '  worker:',
    `    timeout: ${workerTimeoutSeconds}    # and the rest of the worker's settings`,
    'custom:',
    '  quotaOrchestrator:',
  ];
  for (const [key, value] of Object.entries(settings)) {
    if (Array.isArray(value))
      lines.push(
        `    ${key}:`,
        ...(value as Readonly<Record<string, unknown>>[]).map((item) => `      - ${flow(item)}`),
      );
    else
      lines.push(
        `    ${key}: ${typeof value === 'object' && value !== null ? flow(value as Readonly<Record<string, unknown>>) : scalar(value)}`,
      );
  }
  return lines;
}

/** Accepts a whole `custom.quotaOrchestrator` with the worker's timeout, as packaging does, or throws. */
export type ExampleValidator = (settings: Readonly<Record<string, unknown>>, workerTimeoutSeconds: number) => void;

/** Throws the error of `example` failing its check: `why`. */
function failed(example: LlmExample, why: string): never {
  throw new Error(`configuration reference, example '${example.title}': ${why}`);
}

/**
 * The YAML of `example`, its settings as the service parses them and its job's estimates, after checking them: the
 * YAML parses back to its settings, which `validate` accepts, and its job passes `parseJob` with the settings' units.
 * @throws Error naming the example when any of that fails.
 */
function checked(example: LlmExample, validate: ExampleValidator) {
  const yaml = yamlOf(example);
  const read = yamlParse(yaml.join('\n')) as {
    functions?: { worker?: { timeout?: unknown } };
    custom?: { quotaOrchestrator?: unknown };
  };
  const parsedBack = { timeout: read.functions?.worker?.timeout, settings: read.custom?.quotaOrchestrator };
  if (!isDeepStrictEqual(parsedBack, { timeout: example.workerTimeoutSeconds, settings: example.settings }))
    failed(example, `its YAML reads back as ${JSON.stringify(parsedBack)}`);
  validate(example.settings, example.workerTimeoutSeconds);
  const config = parseServiceConfig(
    Object.fromEntries(Object.entries(example.settings).filter(([key]) => !example.deployKeys.includes(key))),
  );
  const attributes = Object.fromEntries(
    example.attributes.map(({ name, value }) => [name, { dataType: 'Number', value: String(value) }]),
  );
  const parsed = parseJob(
    {
      queue: 'main',
      messageId: 'example',
      receiptHandle: '',
      body: JSON.stringify(example.body),
      attributes,
      receiveCount: 1,
    },
    config.units,
  );
  if (!parsed.ok) return failed(example, `its job is refused: ${parsed.reason}`);
  return { yaml, config, costs: parsed.job.costs };
}

/**
 * The markdown of one example, after checking it (see {@link checked}) and that the worker reads every unit from its
 * answer.
 * @throws Error naming the example when any of that fails.
 */
function renderExample(example: LlmExample, validate: ExampleValidator): string[] {
  const { yaml, config, costs } = checked(example, validate);
  const usage = readUsage(usageSourcesOf(config.units), { headers: {}, body: JSON.stringify(example.answer) });
  const counted = countedUsage(config.units, costs, usage);
  const back = handedBack({ reservation: { at: 0, costs, windows: {} }, actual: counted });
  const units = Object.keys(config.units);
  const unread = units.filter((unit) => usage[unit] === undefined);
  if (unread.length > 0) failed(example, `the worker reads no ${inWords(unread)} from its answer`);
  const returned = units.filter((unit) => (back[unit] ?? 0) > 0).map((unit) => `${back[unit]} \`${unit}\``);
  const sendAttributes = Object.fromEntries(
    example.attributes.map(({ name, value }) => [name, { DataType: 'Number', StringValue: String(value) }]),
  );
  return [
    `### ${example.title}`,
    '',
    ...example.intro,
    '',
    '```yaml',
    ...yaml,
    '```',
    '',
    "A job's body is the provider's request, sent as it is:",
    '',
    '```json',
    JSON.stringify(example.body),
    '```',
    '',
    'and its message carries the estimates as Number attributes:',
    '',
    '| Attribute | In this job | Set it to |',
    '| --- | --- | --- |',
    ...example.attributes.map(({ name, value, setTo }) => `| \`${name}\` | \`${value}\` | ${setTo} |`),
    '',
    'In an SQS `SendMessage` request, its `MessageAttributes`:',
    '',
    '```json',
    JSON.stringify(sendAttributes),
    '```',
    '',
    'The provider answers, among the rest:',
    '',
    '```json',
    JSON.stringify(example.answer),
    '```',
    '',
    `From it the worker reads ${inWords(units.map((unit) => `\`${unit}\` ${usage[unit]}`))}, where the message reserved`,
    `${inWords(units.map((unit) => `${costs[unit]}`))}: ${returned.length === 0 ? 'nothing goes back to the quota:' : `${inWords(returned)} go back to the quota, usable by the next dispatch once the`}`,
    returned.length === 0
      ? `${keptWords(units.filter((unit) => config.units[unit]?.counts === 'estimate'))}.`
      : 'orchestrator folds the report in (at its next flush).',
    '',
    ...example.outro,
  ];
}

/** Why nothing of `kept`, the units whose provider counts the estimate, goes back (see `UnitSetting.counts`). */
function keptWords(kept: readonly string[]): string {
  if (kept.length === 0) return 'the answer used all it reserved';
  return `the provider counts the estimate of ${inWords(kept.map((unit) => `\`${unit}\``))} (\`counts: estimate\`, from the preset) and gives nothing back, so the unused part stays counted`;
}

/**
 * The markdown of the examples section (below its heading), each example checked first (see {@link renderExample}).
 */
export function llmExamplesSection(validate: ExampleValidator): string[] {
  return [
    'Two lanes for LLM providers, end to end: the limits as tiers, the cap on calls in progress, the preset that reads',
    'usage from the answer, and what a producer puts on each message. How estimates are reserved and settled:',
    "[quotas and pacing](quotas-and-pacing.md#named-units-and-estimates); the producer's side:",
    '[producers](producers.md#token-estimates-for-llm-apis).',
    '',
    `An LLM's answer takes seconds to minutes, so both give the worker ${WORKER_TIMEOUT_SECONDS} s and a call ${LONG_CALLS.apiTimeoutMs / 1000} s (\`apiTimeoutMs\`; the`,
    `default, 10 s, would count long answers as timeouts and open the circuit). A health check's timeout and a message's`,
    `visibility grow with them, in the order [packaging checks](#what-packaging-checks). A call that never reports frees its`,
    "slot once it can no longer be running: the arrival margin plus the worker's timeout after its slot.",
    ...LLM_EXAMPLES.flatMap((example) => ['', ...renderExample(example, validate)]),
  ];
}
