/**
 * Lambda Function URL for the clouds that push: Azure Event Grid (`POST /azure`), Azure Monitor's
 * Activity Log alerts in the common alert schema (`POST /azure/alert`, from an action group's webhook)
 * and GCP Pub/Sub push (`POST /gcp`), one handler per protocol on middy's HTTP router; errors become
 * answers through middy's HTTP error handler. Unauthenticated → 401, malformed → 400, unrelated events →
 * 200 and ignored, coverage that cannot be told now (discovery failed) → 503 so the cloud delivers again.
 *
 * Each names a cluster to sync; none decides anything itself. Two are the cloud's word that an operation
 * ended — GKE's last audit entry of a long-running operation (`operation.last`), and the Activity Log's
 * event of an AKS operation's end (status `Succeeded`, `Failed` or `Canceled`) — and end the cluster's
 * chase when the sync finds it settled or gone (clusterSync.ts); a deletion is still only ever the sync's,
 * on the cloud's per-cluster answer.
 *
 * One file because the three protocols share one answering policy (401, 400, 200, 503) and one way to a
 * cluster's sync; each protocol's own part is a few dozen lines.
 */
import { timingSafeEqual } from 'node:crypto';
import httpErrorHandler from '@middy/http-error-handler';
import httpRouterHandler from '@middy/http-router';
import type { Context, APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { z } from 'zod';
import { readSecret } from '../adapters/shared/secrets.ts';
import { memoizeUntilFailure } from '../adapters/shared/memo.ts';
import type { ClusterSyncReport } from '../core/sync/engine.ts';
import { clusterKey } from '../core/sync/clusterKeys.ts';
import type { ClusterRef } from '../core/sync/ports.ts';
import { clusterSyncOnce } from './clusterSync.ts';
import { isIdempotencyInProgress, lazyDeps, logger, withPowertools, type FunctionDeps } from './runtime.ts';
import { aksProvider } from '../adapters/compose/providers/aks.ts';
import { gkeProvider } from '../adapters/compose/providers/gke.ts';
import { validClusterName, validGcpLocation, validResourceGroup } from './targets.ts';
import type { Scope } from '../core/domain/model/scope.ts';
import { foldCase } from '../core/domain/naming.ts';
import { ONCE_WORK } from './onceWork.ts';

/**
 * An answer other than 200: what middy's HTTP error handler sends (`statusCode`, and the body as
 * `{ "message": … }`). 5xx answers are exposed too, so the cloud is told to deliver again.
 */
export class WebhookError extends Error {
  readonly statusCode: number;
  readonly expose = true;
  readonly reason: string;
  constructor(statusCode: number, reason: string) {
    super(JSON.stringify({ message: reason }));
    this.name = 'WebhookError';
    this.statusCode = statusCode;
    this.reason = reason;
  }
}

/**
 * The configured account-wide scope an event's account falls in, or undefined when the configuration
 * does not cover it. Coverage that cannot be told now (discovery failed) is not a no: 503, delivered again.
 */
async function coveredScope(
  deps: FunctionDeps,
  provider: 'gke' | 'aks',
  account: string,
): Promise<Scope | undefined> {
  const resolved = await deps.resolveScopes({ scopes: [{ provider, account }] });
  const undetermined = resolved.refused.find((r) => r.undetermined);
  if (undetermined) throw new WebhookError(503, `${undetermined.requested}: ${undetermined.reason}`);
  if (resolved.refused.length > 0 || resolved.scopes.length === 0) return undefined;
  return { provider, account: resolved.scopes[0]!.account, region: '*' };
}

const json = (statusCode: number, body: unknown): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

function bodyOf(event: APIGatewayProxyEventV2): unknown {
  const text =
    event.body === undefined
      ? ''
      : event.isBase64Encoded
        ? Buffer.from(event.body, 'base64').toString('utf8')
        : event.body;
  try {
    return JSON.parse(text);
  } catch {
    throw new WebhookError(400, 'the body is not JSON');
  }
}

function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  const found = Object.entries(event.headers ?? {}).find(([key]) => key.toLowerCase() === name);
  return found?.[1];
}

function sameSecret(given: string | undefined, expected: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const EventGridEvent = z.looseObject({
  id: z.string().min(1),
  eventType: z.string().min(1),
  subject: z.string().default(''),
  data: z
    .looseObject({
      validationCode: z.string().optional(),
      resourceUri: z.string().optional(),
      operationName: z.string().optional(),
    })
    .default({}),
});
const EventGridDelivery = z.array(EventGridEvent).min(1);

/**
 * Function time kept back before a cluster's sync is started (the stack gives the webhook 30 s). A delivery that names
 * more clusters than its time allows (an Event Grid subscription batching events) is answered 503 once the time left
 * is under this, naming the clusters not synced: Event Grid delivers it again, those synced are answered from their
 * records and the rest are synced then, rather than the function being stopped mid-sync at its timeout.
 */
export const SYNC_RESERVE_MILLIS = 10_000;

const MANAGED_CLUSTER =
  /^\/subscriptions\/([^/]+)\/resourceGroups\/([^/]+)\/providers\/Microsoft\.ContainerService\/managedClusters\/([^/]+)/i;
const RESOURCE_EVENTS = new Set([
  'Microsoft.Resources.ResourceWriteSuccess',
  'Microsoft.Resources.ResourceDeleteSuccess',
]);

/** An Azure Monitor alert in the common alert schema, as an action group's webhook posts it (the fields read). */
const CommonAlert = z.looseObject({
  schemaId: z.literal('azureMonitorCommonAlertSchema'),
  data: z.looseObject({
    essentials: z.looseObject({
      alertId: z.string().min(1),
      signalType: z.string().min(1),
      monitoringService: z.string().min(1),
      alertTargetIDs: z.array(z.string()).default([]),
    }),
    alertContext: z
      .looseObject({
        operationName: z.string().optional(),
        status: z.string().optional(),
        eventDataId: z.string().min(1).optional(),
        authorization: z.looseObject({ scope: z.string().optional() }).nullish(),
      })
      .nullish(),
  }),
});
/** The Activity Log operations on a managed cluster or one of its node pools that cpsync follows. */
const AKS_OPERATIONS = /^Microsoft\.ContainerService\/managedClusters(?:\/agentPools)?\/(?:write|delete)$/i;
/** Activity Log statuses that end an operation. */
const ENDED = new Set(['succeeded', 'failed', 'canceled']);

const PubSubPush = z.looseObject({
  message: z.looseObject({ data: z.string().min(1), messageId: z.string().min(1) }),
  subscription: z.string().optional(),
});
const AuditLogEntry = z.looseObject({
  protoPayload: z.looseObject({ serviceName: z.string(), methodName: z.string(), resourceName: z.string() }),
  /** A long-running operation's entries: the first as it starts, the last (`last: true`) as it ends. */
  operation: z
    .looseObject({
      id: z.string().min(1),
      producer: z.string().optional(),
      first: z.boolean().optional(),
      last: z.boolean().optional(),
    })
    .optional(),
});
const GKE_CLUSTER = /^projects\/([^/]+)\/(?:locations|zones)\/([^/]+)\/clusters\/([^/]+)/;
const GKE_METHODS = /ClusterManager\.(Create|Delete|Update|Set\w+|Start\w+|Complete\w+)|NodePool/;

export interface WebhookOptions {
  /** Key set of Google's OIDC signing keys. @default the remote JWKS at the configured URI */
  googleKeys?: JWTVerifyGetKey;
}

export function makeWebhook(
  getDeps: () => Promise<FunctionDeps> = lazyDeps([gkeProvider, aksProvider]),
  options: WebhookOptions = {},
) {
  // Read once per container — but a read that failed is not kept: the next delivery reads again.
  let azureKey: (() => Promise<string>) | undefined;
  let googleKeys = options.googleKeys;

  // Keyed by the delivery's own id (Event Grid event id, Pub/Sub message id) and the cluster it names: a
  // redelivery is recognised, and an id another delivery reuses for another cluster is not its answer.
  const apply = clusterSyncOnce(ONCE_WORK.webhook, getDeps);

  async function sync(
    deps: FunctionDeps,
    context: Context,
    deliveryId: string,
    ref: ClusterRef,
    completes = false,
  ): Promise<{ result: ClusterSyncReport['result']; duplicate: boolean }> {
    const key = `${ref.scope.provider}:${deliveryId}:${clusterKey(ref)}`;
    let outcome;
    try {
      outcome = await apply(deps, { key, ref, ...(completes ? { completes } : {}) }, context);
    } catch (error) {
      if (isIdempotencyInProgress(error))
        throw new WebhookError(429, `delivery ${deliveryId} is being processed; retry later`);
      throw error;
    }
    if (!outcome.replayed)
      logger.info('cluster synced from event', {
        deliveryId,
        provider: ref.scope.provider,
        cluster: ref.name,
        result: outcome.value.result,
        ...(completes ? { operationEnded: true, chase: outcome.value.chase } : {}),
      });
    return { result: outcome.value.result, duplicate: outcome.replayed };
  }

  /** Azure's deliveries carry the key the stack made (`?key=` or the `x-cpsync-key` header): 401 otherwise. */
  async function azureAuthenticated(deps: FunctionDeps, event: APIGatewayProxyEventV2): Promise<void> {
    const settings = deps.config.webhook.azure;
    if (!settings) throw new WebhookError(404, 'Azure events are not configured');
    azureKey ??= memoizeUntilFailure(() => readSecret(settings.key).then((k) => k.trim()));
    if (!sameSecret(event.queryStringParameters?.key ?? header(event, 'x-cpsync-key'), await azureKey()))
      throw new WebhookError(401, 'missing or wrong key');
  }

  /** The AKS cluster `resourceId` names, synced; undefined when it names none the configuration covers. */
  async function syncAks(
    deps: FunctionDeps,
    context: Context,
    deliveryId: string,
    resourceId: string,
    completes = false,
  ): Promise<{ key: string; result: string; duplicate: boolean } | undefined> {
    const match = MANAGED_CLUSTER.exec(resourceId);
    if (!match) return undefined;
    const [, subscription, resourceGroup, name] = match as unknown as [string, string, string, string];
    const scope =
      validClusterName('aks', name) && validResourceGroup(resourceGroup)
        ? await coveredScope(deps, 'aks', subscription)
        : undefined;
    if (!scope) return undefined;
    const key = foldCase(`${subscription}/${resourceGroup}/${name}`);
    const { result, duplicate } = await sync(
      deps,
      context,
      deliveryId,
      { scope, name, resourceGroup },
      completes,
    );
    return { key, result, duplicate };
  }

  async function azure(
    deps: FunctionDeps,
    context: Context,
    event: APIGatewayProxyEventV2,
  ): Promise<APIGatewayProxyStructuredResultV2> {
    await azureAuthenticated(deps, event);
    const delivery = EventGridDelivery.safeParse(bodyOf(event));
    if (!delivery.success)
      throw new WebhookError(400, `not an Event Grid delivery: ${delivery.error.issues[0]?.message ?? ''}`);
    const validation = delivery.data.find(
      (e) => e.eventType === 'Microsoft.EventGrid.SubscriptionValidationEvent',
    );
    if (validation) {
      if (!validation.data.validationCode)
        throw new WebhookError(400, 'validation event without validationCode');
      return json(200, { validationResponse: validation.data.validationCode });
    }
    const results: Record<string, string> = {};
    const duplicates: string[] = [];
    const left = new Set<string>();
    let ignored = 0;
    for (const item of delivery.data) {
      const resourceId = item.data.resourceUri ?? item.subject;
      const match = MANAGED_CLUSTER.exec(resourceId);
      if (!RESOURCE_EVENTS.has(item.eventType) || !match) {
        ignored += 1;
        continue;
      }
      const cluster = foldCase(`${match[1]}/${match[2]}/${match[3]}`);
      if (results[cluster] || left.has(cluster)) continue;
      if (context.getRemainingTimeInMillis() < SYNC_RESERVE_MILLIS) {
        left.add(cluster);
        continue;
      }
      const synced = await syncAks(deps, context, item.id, resourceId);
      if (!synced) {
        ignored += 1;
        continue;
      }
      results[synced.key] = synced.result;
      if (synced.duplicate) duplicates.push(synced.key);
    }
    if (left.size > 0) {
      logger.warn('delivery not synced whole: the time ran short', {
        synced: Object.keys(results),
        left: [...left],
      });
      throw new WebhookError(
        503,
        `the function's time ran short before ${left.size} cluster(s) of this delivery were synced (${[...left].join(', ')}); deliver it again: the ${Object.keys(results).length} synced are answered from their records`,
      );
    }
    return json(200, { synced: results, ignored, ...(duplicates.length ? { duplicates } : {}) });
  }

  /**
   * An Activity Log alert's notification (common alert schema) of an operation on a managed cluster or its
   * node pools: its end (`Succeeded`, `Failed`, `Canceled`) ends the cluster's chase once the sync finds it
   * settled or gone; another status (`Started`, `Accepted`) is a start, synced like Event Grid's events.
   */
  async function azureAlert(
    deps: FunctionDeps,
    context: Context,
    event: APIGatewayProxyEventV2,
  ): Promise<APIGatewayProxyStructuredResultV2> {
    await azureAuthenticated(deps, event);
    const alert = CommonAlert.safeParse(bodyOf(event));
    if (!alert.success) {
      const issue = alert.error.issues[0];
      throw new WebhookError(
        400,
        `not an alert in the common alert schema: ${issue ? `${issue.path.join('.') || '(body)'}: ${issue.message}` : ''}`,
      );
    }
    const { essentials, alertContext } = alert.data.data;
    const operation = alertContext?.operationName ?? '';
    const resourceId = alertContext?.authorization?.scope ?? essentials.alertTargetIDs[0] ?? '';
    if (essentials.monitoringService !== 'Activity Log - Administrative' || !AKS_OPERATIONS.test(operation))
      return json(200, { ignored: 1 });
    const completes = ENDED.has((alertContext?.status ?? '').toLowerCase());
    const synced = await syncAks(
      deps,
      context,
      alertContext?.eventDataId ?? essentials.alertId,
      resourceId,
      completes,
    );
    if (!synced) return json(200, { ignored: 1 });
    return json(200, {
      synced: { [synced.key]: synced.result },
      ...(completes ? { operationEnded: true } : {}),
      ...(synced.duplicate ? { duplicates: [synced.key] } : {}),
    });
  }

  async function gcp(
    deps: FunctionDeps,
    context: Context,
    event: APIGatewayProxyEventV2,
  ): Promise<APIGatewayProxyStructuredResultV2> {
    const settings = deps.config.webhook.gcp;
    if (!settings) throw new WebhookError(404, 'GCP events are not configured');
    const token = /^Bearer (.+)$/.exec(header(event, 'authorization') ?? '')?.[1];
    if (!token) throw new WebhookError(401, 'missing bearer token');
    googleKeys ??= createRemoteJWKSet(new URL(settings.jwksUri));
    try {
      // As Google signs push tokens: RS256, with an expiry (jose checks one only where it is given).
      const { payload } = await jwtVerify(token, googleKeys, {
        issuer: settings.issuers,
        audience: settings.audience,
        algorithms: ['RS256'],
        requiredClaims: ['exp', 'iat', 'email'],
      });
      if (payload.email !== settings.serviceAccountEmail || payload.email_verified !== true)
        throw new Error('unexpected service account');
    } catch (error) {
      logger.warn('refused a Pub/Sub push', { reason: (error as Error).message });
      throw new WebhookError(401, 'invalid token');
    }
    const push = PubSubPush.safeParse(bodyOf(event));
    if (!push.success) throw new WebhookError(400, 'not a Pub/Sub push message');
    let data: unknown;
    try {
      data = JSON.parse(Buffer.from(push.data.message.data, 'base64').toString('utf8'));
    } catch {
      throw new WebhookError(400, 'the message data is not an audit log entry');
    }
    const parsed = AuditLogEntry.safeParse(data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new WebhookError(
        400,
        `the message data is not an audit log entry${issue ? `: ${issue.path.join('.') || '(entry)'}: ${issue.message}` : ''}`,
      );
    }
    const entry = parsed.data;
    const { serviceName, methodName, resourceName } = entry.protoPayload;
    const match = GKE_CLUSTER.exec(resourceName);
    if (serviceName !== 'container.googleapis.com' || !GKE_METHODS.test(methodName) || !match)
      return json(200, { ignored: 1 });
    const [, project, location, name] = match as unknown as [string, string, string, string];
    const scope =
      validClusterName('gke', name) && validGcpLocation(location)
        ? await coveredScope(deps, 'gke', project)
        : undefined;
    if (!scope) return json(200, { ignored: 1 });
    const key = `${project}/${location}/${name}`;
    // The operation's last entry: GKE says it ended (done, or failed).
    const completes = entry.operation?.last === true;
    const { result, duplicate } = await sync(
      deps,
      context,
      push.data.message.messageId,
      { scope, name, location },
      completes,
    );
    return json(200, {
      synced: { [key]: result },
      ...(completes ? { operationEnded: true } : {}),
      ...(duplicate ? { duplicates: [key] } : {}),
    });
  }

  /** A route: the container's adapters, then the protocol's handler. */
  const route =
    (
      protocol: (
        deps: FunctionDeps,
        context: Context,
        event: APIGatewayProxyEventV2,
      ) => Promise<APIGatewayProxyStructuredResultV2>,
    ) =>
    async (event: APIGatewayProxyEventV2, context: Context) =>
      protocol(await getDeps(), context, event);
  const routes = [
    { method: 'POST' as const, path: '/azure', handler: route(azure) },
    { method: 'POST' as const, path: '/azure/alert', handler: route(azureAlert) },
    { method: 'POST' as const, path: '/gcp', handler: route(gcp) },
  ];
  const router = httpRouterHandler({
    routes,
    notFoundResponse: ({ path }) => {
      throw routes.some((r) => r.path === path)
        ? new WebhookError(405, 'POST only')
        : new WebhookError(404, `no route ${path}`);
    },
  });
  return withPowertools<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>(
    router as (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>,
  ).use(
    httpErrorHandler({
      fallbackMessage: JSON.stringify({ message: 'internal error' }),
      logger: (error: unknown) => {
        if (!(error instanceof WebhookError)) logger.error('webhook failed', error as Error);
      },
    }),
  );
}

export const handler = makeWebhook();
