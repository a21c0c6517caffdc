'use strict';
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS module: osls loads plugins with require(). */

/**
 * osls plugin: turns `custom.quotaOrchestrator` into the functions' validated configuration.
 *
 * Before anything is packaged (`package`, and so `deploy`, which packages first) it validates the settings with
 * the service's own parser (`parseServiceConfig` in lib/config.ts, via lib/deploy/quotaSettings.ts) and
 * cross-checks them against the functions' timeouts and the queues' redrive. On success it adds `LANE`,
 * `TIME_ZONE`, `QUOTAS`, `PACING`, `CIRCUIT`, `RETRY` and `ORCHESTRATOR` to `provider.environment`, and `API_URL`,
 * `HEALTH_URL` (and `API_TIMEOUT_MS`, `API_KEY_PARAMETER`, `API_KEY_CACHE_SECONDS`, `API_KEY_READ_TIMEOUT_MS` and `RESULT_DESTINATION`, if set) to the worker's
 * environment, the schedule (`lib/schedule.ts`) to the orchestrator's events, and, with a result destination
 * (`results`), the statement that lets the worker send to it to `WorkerRole`'s policy (resources/iam.yml). On
 * failure it stops the command with a
 * message naming the field, e.g. `custom.quotaOrchestrator.quotas[0].limit: must be an integer from 1 to ...`.
 *
 * `before:package:initialize` is the hook: it runs once per `package` or `deploy`, after variables are resolved and
 * before serverless-esbuild bundles (`package:createDeploymentArtifacts`) or the functions, with their
 * environment, are compiled (`package:compileFunctions`). `deploy function`, `invoke local` and `offline start`,
 * which read the environment without packaging, get the same step. The generic `initialize` hook would also run,
 * and fail, for commands that need no configuration, such as `remove` or `print`.
 *
 * The TypeScript is loaded with tsx's scoped `require` (`tsx/cjs/api`): it compiles only the modules it is asked
 * for and leaves Node's global `require` untouched, so osls and its other plugins load exactly as without it.
 */

const path = require('node:path');

/** osls error code of a rejected setting. */
const ERROR_CODE = 'QUOTA_ORCHESTRATOR_CONFIG_INVALID';

/** Loads lib/deploy/quotaSettings.ts (and with it lib/config.ts) through tsx, once. */
let settingsModule;
function loadQuotaSettings() {
  if (settingsModule === undefined) {
    const { require: tsxRequire } = require('tsx/cjs/api');
    settingsModule = tsxRequire(path.join(__dirname, 'quotaSettings.ts'), __dirname);
  }
  return settingsModule;
}

class QuotaConfigPlugin {
  /**
   * @param {object} serverless the osls instance
   * @param {object} _options CLI options (unused)
   * @param {{ log?: { verbose(message: string): void } }} [utils] osls v3 plugin utilities
   * @param {{ loadQuotaSettings?: () => object }} [deps] for tests: the quotaSettings module, loaded otherwise.
   * @default deps.loadQuotaSettings loads lib/deploy/quotaSettings.ts with tsx
   */
  constructor(serverless, _options, utils, deps) {
    this.serverless = serverless;
    this.log = utils && utils.log;
    this.loadQuotaSettings = (deps && deps.loadQuotaSettings) || loadQuotaSettings;
    this.hooks = {
      'before:package:initialize': () => this.configure(),
      // `deploy function` pushes each function's environment too, without packaging the service.
      'before:deploy:function:initialize': () => this.configure(),
      'before:invoke:local:loadEnvVars': () => this.configure(),
      'before:offline:start:init': () => this.configure(),
    };
  }

  /**
   * Validates the settings and sets the environment variables.
   * @throws the osls error class (a clean message, no stack trace) naming the offending field.
   */
  configure() {
    const loaded = this.loadQuotaSettings();
    const service = this.serverless.service;
    let resolved;
    try {
      resolved = loaded.resolveQuotaSettings(service);
      if (resolved.inLanes) this.addLanes(resolved, loaded);
    } catch (error) {
      if (error && error.code === 'CONFIG_INVALID') {
        const ServerlessError = (this.serverless.classes && this.serverless.classes.Error) || Error;
        throw new ServerlessError(error.message, ERROR_CODE);
      }
      throw error;
    }
    service.provider.environment = { ...service.provider.environment, ...resolved.provider };
    const worker = service.functions.worker;
    worker.environment = { ...worker.environment, ...resolved.worker };
    const orchestrator = service.functions.orchestrator;
    orchestrator.events = [...(orchestrator.events || []), ...resolved.orchestratorEvents];
    this.grantWorker(resolved.workerStatements);
    if (this.log) {
      const lanes = resolved.lanes.map(({ config }) => {
        const tiers = config.quotas.map((tier) => `${tier.limit}/${tier.per}${tier.unit === 'cost' ? ' (cost)' : ''}`);
        return `lane '${config.lane}', quotas ${tiers.join(', ')}`;
      });
      this.log.verbose(`custom.quotaOrchestrator is valid: ${lanes.join('; ')}`);
    }
  }

  /**
   * The lanes form: gives each lane its queues, alarms, outputs and grants (see lib/deploy/laneResources.ts), and
   * takes the one-lane form's queue URLs out of `provider.environment` (`QUEUE_URL_PREFIX` and the naming rule
   * replace them).
   */
  addLanes(resolved, loaded) {
    const service = this.serverless.service;
    const resources = service.resources || (service.resources = {});
    const lanes = resolved.lanes.map(({ config, worker }) => ({
      lane: config.lane,
      ...(worker.apiKeyParameter === undefined ? {} : { apiKeyParameter: worker.apiKeyParameter }),
      pools: (config.pools || []).map((pool) => pool.name),
    }));
    const template = loaded.laneResources(
      { Resources: resources.Resources || {}, Outputs: resources.Outputs || {} },
      lanes,
      resolved.queueNamePrefix,
      'custom.quotaOrchestrator.lanes',
    );
    resources.Resources = template.Resources;
    resources.Outputs = template.Outputs;
    service.provider.environment = loaded.withoutQueueUrls(service.provider.environment);
  }

  /**
   * Adds `statements` to the worker role's inline policy (`WorkerRole` in resources/iam.yml, merged into
   * `resources.Resources` by the time the hook runs), replacing a statement of the same `Sid` (a second run of the
   * plugin on one service).
   * @throws the osls error class when there are statements to add and no such role.
   */
  grantWorker(statements) {
    if (statements.length === 0) return;
    const role = ((this.serverless.service.resources || {}).Resources || {}).WorkerRole;
    const policy = role && role.Properties && (role.Properties.Policies || [])[0];
    if (!policy || !policy.PolicyDocument) {
      const ServerlessError = (this.serverless.classes && this.serverless.classes.Error) || Error;
      throw new ServerlessError(
        'custom.quotaOrchestrator.results: needs the WorkerRole of resources/iam.yml, with an inline policy, to grant the worker the send to its result destination',
        ERROR_CODE,
      );
    }
    const sids = new Set(statements.map((statement) => statement.Sid));
    const kept = [].concat(policy.PolicyDocument.Statement || []).filter((statement) => !sids.has(statement.Sid));
    policy.PolicyDocument.Statement = [...kept, ...statements];
  }
}

module.exports = QuotaConfigPlugin;
