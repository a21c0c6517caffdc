import { NO_KEY_SCHEME, type RequestSettings } from '../../lib/requestSettings';
import { WORKER_ENV, type Env } from '../../lib/configFromEnv';
import type { RequiredHeaders } from './apiServer';

/** The API key a local run keeps in its parameter store, and the parameter that holds it. */
export const LOCAL_API_KEY = { parameter: '/quota-orchestrator/local/api-key', value: 'local-api-key' } as const;

/** The worker's variables for `request`, as packaging writes them from serverless.yml. */
export function requestEnv(request: RequestSettings): Env {
  return {
    [WORKER_ENV.apiMethod]: request.apiMethod,
    [WORKER_ENV.requestHeaders]: JSON.stringify(request.requestHeaders),
    [WORKER_ENV.apiKeyHeader]: request.apiKeyHeader,
    [WORKER_ENV.apiKeyScheme]: request.apiKeyScheme ?? NO_KEY_SCHEME,
    [WORKER_ENV.healthCheckSendsKey]: String(request.healthCheckSendsKey),
  };
}

/**
 * The headers a provider configured as `request` says requires, with `key`: the static headers on every request,
 * the key in its header and form on calls, and on health checks when they carry it.
 */
export function requiredHeaders(request: RequestSettings, key: string): RequiredHeaders {
  const keyHeader = {
    [request.apiKeyHeader]: request.apiKeyScheme === undefined ? key : `${request.apiKeyScheme} ${key}`,
  };
  return {
    calls: { ...request.requestHeaders, ...keyHeader },
    probes: { ...request.requestHeaders, ...(request.healthCheckSendsKey ? keyHeader : {}) },
  };
}
