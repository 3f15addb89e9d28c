/**
 * An outbound proxy for the AWS SDK. Google's and Azure's clients follow `HTTPS_PROXY`, `HTTP_PROXY` and
 * `NO_PROXY` themselves; the AWS SDK for JavaScript does not (each client makes its own agents, which
 * Node's `NODE_USE_ENV_PROXY` does not reach). Node's own proxy support does it per request when an agent
 * is made with `proxyEnv` (Node ≥ 24.5, as Lambda's and setup's Node 24; an older Node ignores the option
 * and connects directly, as before).
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { InvalidOptionError } from '../../core/domain/errors.ts';
import { withoutUserinfo } from '../../core/domain/text.ts';

const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'] as const;

/** A proxy variable's value as Node reads it: a URL, `http://` assumed when no scheme is given (as curl does). */
function proxyUrl(name: string, value: string): string {
  const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(value.trim()) ? value.trim() : `http://${value.trim()}`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Quoted without its user and password: a proxy URL may carry them.
    const shown = withoutUserinfo(value);
    throw new InvalidOptionError(`environment variable ${name}`, `is not a proxy URL: "${shown}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new InvalidOptionError(
      `environment variable ${name}`,
      `names a ${parsed.protocol.slice(0, -1)} proxy; only http:// and https:// proxies are supported`,
    );
  return url;
}

/**
 * Agent options that send requests through the proxy the environment names (NO_PROXY honoured); none
 * when it names no proxy, so an agent without one is exactly Node's own. A value that is not a proxy URL
 * is refused, naming the variable (Node would connect directly without a word).
 */
export function proxyAgentOptions(env: NodeJS.ProcessEnv = process.env): { proxyEnv?: NodeJS.ProcessEnv } {
  const named = PROXY_VARIABLES.filter((name) => env[name]?.trim());
  if (named.length === 0) return {};
  const proxyEnv = { ...env };
  for (const name of named) proxyEnv[name] = proxyUrl(name, env[name]!);
  return { proxyEnv };
}

/** Kept-alive agents for the AWS SDK's request handler, through the environment's proxy if it names one. */
export function awsAgents(env: NodeJS.ProcessEnv = process.env): {
  httpAgent: HttpAgent;
  httpsAgent: HttpsAgent;
} {
  const proxy = proxyAgentOptions(env);
  return {
    httpAgent: new HttpAgent({ keepAlive: true, ...proxy }),
    httpsAgent: new HttpsAgent({ keepAlive: true, ...proxy }),
  };
}

/**
 * A request handler for an AWS client made with the SDK's defaults otherwise (its own kept-alive
 * agents), when the environment names a proxy; nothing to add when it does not.
 */
export function awsProxyConfig(env: NodeJS.ProcessEnv = process.env): {
  requestHandler?: { httpAgent: HttpAgent; httpsAgent: HttpsAgent };
} {
  return proxyAgentOptions(env).proxyEnv ? { requestHandler: awsAgents(env) } : {};
}
