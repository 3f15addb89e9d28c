/**
 * cpsync's own access to a member cluster, as a consumer reaches it: the server and CA of the profile's
 * access provider and a token from the same code `cpsync credentials` runs, with each request bound to a
 * signal. Shared by the member probe and the access grants.
 */
import type { LookupFunction } from 'node:net';
import {
  KubeConfig,
  Observable,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { messageOf } from '../../core/domain/errors.ts';
import { EXEC_EXTENSION_NAME, LABEL_PROVIDER } from '../../core/domain/constants.ts';
import { serverCpsyncWrites } from '../../core/domain/endpoints.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import type { Provider } from '../../core/domain/model/observedCluster.ts';
import { own } from '../../core/domain/own.ts';
import { targetOfExtension, type Target } from '../credentials/target.ts';
import type { ClusterToken } from '../credentials/tokens.ts';
import { guardedLookup } from '../shared/guardedLookup.ts';
import { http1Dispatcher } from '../shared/http1.ts';
import type { Dispatcher } from 'undici';

export interface MemberAccess {
  /** A token for a cluster of each provider (the provider's own credentials). */
  tokens: Partial<Record<Provider, (target: Target) => Promise<ClusterToken>>>;
  accessProviderNames: Record<Provider, string>;
  /**
   * Clouds the configuration reaches on this machine (local emulators): their members' servers may be loopback
   * addresses. @default none
   */
  localClouds?: readonly Provider[];
  /**
   * The resolver for members' server names, whose answers `guardedLookup` judges at every connection.
   * @default the system's resolver (`dns.lookup`)
   */
  resolve?: LookupFunction;
}

/** Why a member cannot be reached before any request is made (no access provider, no token). */
export class MemberAccessError extends Error {
  readonly reason: 'NoAccessProvider' | 'NoToken';
  constructor(reason: 'NoAccessProvider' | 'NoToken', message: string) {
    super(message);
    this.reason = reason;
  }
}

/** The member's client configuration and the request options that bind its requests to `signal`. */
export async function memberConnection(
  profile: ClusterProfile,
  access: MemberAccess,
  signal: AbortSignal,
  stable: (text: string) => string = (text) => text,
): Promise<{ config: KubeConfig; options: ConfigurationOptions }> {
  // The provider label is the hub's word: only a provider cpsync knows names an access provider and a token.
  const provider = profile.metadata.labels?.[LABEL_PROVIDER] ?? '';
  const name = own(access.accessProviderNames, provider);
  const cluster = profile.status?.accessProviders?.find((a) => a.name === name)?.cluster;
  const tokenFor = own(access.tokens, provider);
  if (!provider || !cluster?.server || !tokenFor)
    throw new MemberAccessError(
      'NoAccessProvider',
      'the profile has no access provider cpsync can reach the member with',
    );
  // cpsync's own token goes to the server: only to one cpsync itself writes, whoever made the profile handed here.
  if (!serverCpsyncWrites(cluster.server, provider, access.localClouds))
    throw new MemberAccessError(
      'NoAccessProvider',
      `the profile's server ${stable(JSON.stringify(cluster.server))} is not one cpsync writes: no token is sent there`,
    );
  let token: ClusterToken;
  try {
    const extension = cluster.extensions?.find((e) => e.name === EXEC_EXTENSION_NAME)?.extension;
    token = await tokenFor(targetOfExtension(extension));
  } catch (error) {
    throw new MemberAccessError('NoToken', `no token for the member: ${stable(messageOf(error))}`);
  }
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [
      {
        name: 'member',
        server: cluster.server,
        ...(cluster['certificate-authority-data'] ? { caData: cluster['certificate-authority-data'] } : {}),
      },
    ],
    users: [{ name: 'cpsync', token: token.token }],
    contexts: [{ name: 'member', cluster: 'member', user: 'cpsync' }],
    currentContext: 'member',
  });
  // One connection pool for the member's requests, over HTTP/1.1 (see http1Dispatcher), connecting only to
  // addresses a server may be at, whatever the server's name resolves to, and only to the server itself: a
  // redirect elsewhere (an address written as such is never looked up) is refused. Never through a proxy, and
  // never through client-node's own pool, which would judge neither.
  const pool = http1Dispatcher(
    config,
    guardedLookup(access.localClouds?.includes(provider as Provider) ?? false, access.resolve),
  );
  if (!pool)
    throw new MemberAccessError('NoAccessProvider', 'cpsync reaches members directly, never through a proxy');
  const dispatcher = pinnedTo(pool, cluster.server);
  const middleware: ObservableMiddleware = {
    pre: (context: RequestContext) => {
      context.setDispatcher(dispatcher);
      context.setSignal(signal);
      return new Observable(Promise.resolve(context));
    },
    post: (response: ResponseContext) => new Observable(Promise.resolve(response)),
  };
  return { config, options: { middleware: [middleware], middlewareMergeStrategy: 'append' } };
}

/** `pool` sending only to `server`'s origin: a request anywhere else (a redirect's target) fails unsent. */
function pinnedTo(pool: Dispatcher, server: string): Dispatcher {
  const origin = new URL(server).origin;
  return pool.compose((dispatch) => (options, handler) => {
    const to = options.origin === undefined ? origin : new URL(String(options.origin)).origin;
    if (to !== origin)
      throw Object.assign(
        new Error(
          `the member's server ${origin} sent cpsync to ${to}: not followed, only the server is asked`,
        ),
        { code: 'ERR_CPSYNC_OTHER_ORIGIN' },
      );
    return dispatch(options, handler);
  });
}
