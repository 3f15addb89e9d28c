/**
 * EventBridge (default bus): CloudTrail `AWS API Call via CloudTrail` events from eks.amazonaws.com.
 * Syncs the one cluster the call concerned; a cluster DescribeCluster no longer finds is deleted at once.
 */
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import { parser } from '@aws-lambda-powertools/parser/middleware';
import { EventBridgeSchema } from '@aws-lambda-powertools/parser/schemas/eventbridge';
import type { Context } from 'aws-lambda';
import type { MiddlewareObj } from '@middy/core';
import { z } from 'zod';
import { cut, printable } from '../core/domain/text.ts';
import { lazyDeps, logger, metrics, withPowertools, type FunctionDeps } from './runtime.ts';
import { clusterSyncOnce } from './clusterSync.ts';
import { eksProvider } from '../adapters/compose/providers/eks.ts';
import { validClusterName } from './targets.ts';
import { ONCE_WORK } from './onceWork.ts';

/** The CloudTrail record as EventBridge carries it in `detail` (the fields cpsync reads). */
const CloudTrailDetail = z.looseObject({
  eventSource: z.literal('eks.amazonaws.com'),
  eventName: z.string().min(1),
  awsRegion: z.string().min(1),
  recipientAccountId: z.string().regex(/^\d{12}$/),
  errorCode: z.string().optional(),
  requestParameters: z
    .looseObject({
      name: z.string().optional(),
      clusterName: z.string().optional(),
      resourceArn: z.string().optional(),
    })
    .nullish(),
});

export const EksCloudTrailEvent = EventBridgeSchema.extend({ detail: CloudTrailDetail });
export type EksCloudTrailEvent = z.infer<typeof EksCloudTrailEvent>;

/** The cluster a call is about: its `name`/`clusterName` parameter, or the cluster in a tagged resource's ARN. */
export function clusterNameOf(detail: z.infer<typeof CloudTrailDetail>): string | undefined {
  const parameters = detail.requestParameters ?? {};
  if (parameters.clusterName) return parameters.clusterName;
  if (parameters.name && !/Addon|FargateProfile|AccessEntry|PodIdentity/.test(detail.eventName))
    return parameters.name;
  const arn = /^arn:[^:]+:eks:[^:]+:\d{12}:(?:cluster|nodegroup|addon|fargateprofile)\/([^/]+)/.exec(
    parameters.resourceArn ?? '',
  );
  return arn?.[1] ?? parameters.name;
}

/** An event whose account the configuration may or may not cover (discovery failed): it fails, and EventBridge delivers it again. */
export class CoverageUndeterminedError extends Error {
  override readonly name = 'CoverageUndeterminedError';
}

export function makeEksEventHandler(getDeps: () => Promise<FunctionDeps> = lazyDeps([eksProvider])) {
  // Keyed by the EventBridge event id: a redelivered event (EventBridge retries, at-least-once) is recognised.
  const apply = clusterSyncOnce(ONCE_WORK.eksEventHandler, getDeps);
  return withPowertools(async (event: EksCloudTrailEvent, context: Context) => {
    const deps = await getDeps();
    const { detail } = event;
    const name = clusterNameOf(detail);
    if (detail.errorCode || !name || !validClusterName('eks', name)) {
      logger.info('ignored: the call failed or names no cluster', {
        eventId: event.id,
        eventName: detail.eventName,
        errorCode: detail.errorCode,
      });
      return { result: 'ignored' as const };
    }
    const asked = { provider: 'eks' as const, account: detail.recipientAccountId, region: detail.awsRegion };
    const resolved = await deps.resolveScopes({ scopes: [asked] });
    const scope = resolved.scopes[0];
    // Discovery that failed is not a no: the event fails, and EventBridge delivers it again.
    const undetermined = resolved.refused.find((r) => r.undetermined);
    if (undetermined)
      throw new CoverageUndeterminedError(
        `event ${event.id}: ${undetermined.requested}: ${undetermined.reason}`,
      );
    if (!scope || resolved.refused.length > 0) {
      logger.info('event refused: account or region outside the configuration', {
        eventId: event.id,
        ...asked,
        reason: resolved.refused[0]?.reason ?? 'it stands for more than one configured scope',
      });
      return { result: 'ignored' as const };
    }
    const { value: outcome, replayed } = await apply(deps, { key: event.id, ref: { scope, name } }, context);
    if (replayed) return { ...outcome, duplicate: true };
    metrics.addMetric(
      'ClusterEventsApplied',
      MetricUnit.Count,
      outcome.result === 'unchanged' || outcome.result === 'absent' ? 0 : 1,
    );
    logger.info('cluster synced from event', {
      eventId: event.id,
      eventName: detail.eventName,
      cluster: name,
      result: outcome.result,
    });
    return outcome;
  })
    .use(logRefusal)
    .use(parser({ schema: EksCloudTrailEvent }));
}

/**
 * An event the parser refuses (not a CloudTrail call of EKS as this handler reads it) is logged at INFO with
 * what is wrong — the fields and why, never their values — and fails as before.
 */
const logRefusal: MiddlewareObj<unknown> = {
  onError: (request) => {
    const error = request.error;
    if (error?.name !== 'ParseError') return;
    const issues = Array.isArray(error.cause) ? (error.cause as StandardIssue[]) : [];
    const id = (request.event as { id?: unknown } | undefined)?.id;
    logger.info('event refused: malformed', {
      ...(typeof id === 'string' ? { eventId: printable(cut(id, 100)) } : {}),
      reason: printable(
        cut(issues.map((issue) => `${pathOf(issue)}: ${issue.message}`).join('; ') || error.message, 500),
      ),
    });
  },
};

/** A Standard Schema issue, as the parser's error carries them. */
interface StandardIssue {
  message: string;
  path?: ReadonlyArray<PropertyKey | { key: PropertyKey }>;
}

const pathOf = (issue: StandardIssue) =>
  (issue.path ?? []).map((part) => String(typeof part === 'object' ? part.key : part)).join('.') || '(event)';

export const handler = makeEksEventHandler();
