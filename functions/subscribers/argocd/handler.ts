/**
 * Example subscriber: keeps Argo CD's cluster Secrets in step with the inventory. Invoked by an EventBridge
 * rule (`patterns.inventory()`: Created, Updated, Deleted, Announced), one event at a time, once per event id
 * (Powertools idempotency, when ARGOCD_IDEMPOTENCY_TABLE is set); invoked with `{ "reconcile": true }`
 * (on demand, or by a schedule) it rebuilds every managed Secret from the hub, so a missed event never
 * leaves Argo CD wrong for long.
 *
 * Environment: CPSYNC_CONFIG (the hub and inventory, as the other functions have it); ARGOCD_NAMESPACE
 * (default `argocd`); the Argo CD cluster's kubeconfig in ARGOCD_KUBECONFIG_SECRET_ARN (Secrets Manager) or
 * ARGOCD_KUBECONFIG (a file) — default: the hub itself; ARGOCD_CREDENTIALS_COMMAND (default `cpsync`),
 * ARGOCD_CREDENTIALS_ARGS (a JSON list of extra arguments, e.g. `["--role-name","argocd"]`),
 * ARGOCD_UNGUARDED_HUB (`refuse`, the default, or `trust`) and ARGOCD_MISSING_PROFILE_GRACE_MINUTES (default 60: how
 * long a reconcile keeps the Secret of a profile missing from the hub, which cpsync writes again at its next sync).
 *
 * A profile becomes credentials: Argo CD runs `cpsync credentials` for the cluster the profile names and sends the
 * token to the profile's server. So a profile is acted on only where no one but cpsync can have written it: in a
 * namespace the hub's admission policy guards (hubPolicy.ts), read at each invocation. Elsewhere no Secret is made
 * or changed from it: one written while the namespace was guarded, from that very profile, is kept as it was (no
 * write can reach Argo CD from there); any other (written while the hub was trusted, or before it was judged) is
 * removed. Each Secret says how it was written (`cpsync.io/written-under`). ARGOCD_UNGUARDED_HUB=trust acts on every
 * namespace, for a hub whose ClusterProfile writers are all trusted.
 */
import type { IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import type { Composition } from '../../../adapters/compose/compose.ts';
import { memoizeUntilFailure } from '../../../adapters/shared/memo.ts';
import { DetailType } from '../../../events/detailTypes.ts';
import { parseCpsyncEvent } from '../../../events/parse.ts';
import type { CpsyncEventBridgeEvent } from '../../../events/types.ts';
import {
  configFromEnvironment,
  logger,
  metrics,
  settingsFromEnvironment,
  withPowertools,
} from '../../runtime.ts';
import type { HubGuard } from '../../../adapters/hub/hubPolicy.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import type { ArgoCdClusters, CreatedSecret, Outcome, ReconcileReport } from './ArgoCdClusters.ts';
import { untrustedReason } from '../../../core/domain/untrustedReason.ts';
import { deletedByCpsync } from '../../../core/domain/ownership.ts';
import { LABEL_PROJECTED_FROM } from '../../../core/domain/constants.ts';

export interface ArgoCdDeps {
  composition: Composition;
  clusters: ArgoCdClusters;
  /** Which inventory namespaces only cpsync can write profiles in, asked once per invocation. */
  guard: () => Promise<HubGuard>;
  /** How long a profile may be missing from the hub before a reconcile removes its Secret. @default 1 hour */
  missingGraceMillis?: number;
  /** Secrets a reconcile reads or writes at once. @default 8 */
  concurrency?: number;
}

const Settings = z.object({
  ARGOCD_NAMESPACE: z.string().min(1).default('argocd'),
  ARGOCD_KUBECONFIG_SECRET_ARN: z.string().min(1).optional(),
  ARGOCD_KUBECONFIG: z.string().min(1).optional(),
  ARGOCD_CREDENTIALS_COMMAND: z.string().min(1).default('cpsync'),
  ARGOCD_CREDENTIALS_ARGS: z
    .string()
    .optional()
    .transform((text, context) => {
      if (!text) return [];
      try {
        return z.array(z.string()).parse(JSON.parse(text));
      } catch {
        context.addIssue({ code: 'custom', message: 'must be a JSON list of strings' });
        return z.NEVER;
      }
    }),
  ARGOCD_IDEMPOTENCY_TABLE: z.string().min(1).optional(),
  ARGOCD_UNGUARDED_HUB: z.enum(['refuse', 'trust'], { message: 'must be refuse or trust' }).default('refuse'),
  ARGOCD_MISSING_PROFILE_GRACE_MINUTES: z.coerce
    .number({ message: 'must be a whole number of minutes' })
    .int({ message: 'must be a whole number of minutes' })
    .min(0, { message: 'must be 0 or more' })
    .max(10_080, { message: 'must be at most 10080 (a week)' })
    .default(60),
});

type ArgoCdSettings = z.infer<typeof Settings>;
const argoCdSettings = (): ArgoCdSettings => settingsFromEnvironment(Settings, 'Argo CD subscriber settings');

/** How to reach Argo CD's cluster: the kubeconfig its settings name, else the hub's own. */
async function argoKubeConfig(
  settings: ArgoCdSettings,
  composition: Composition,
): Promise<KubeConfig | (() => Promise<KubeConfig>)> {
  const { kubeConfigFromFile, kubeConfigFromSecret } = await import('../../../adapters/compose/hub.ts');
  if (settings.ARGOCD_KUBECONFIG_SECRET_ARN)
    return kubeConfigFromSecret(settings.ARGOCD_KUBECONFIG_SECRET_ARN, 'ARGOCD_KUBECONFIG_SECRET_ARN');
  if (settings.ARGOCD_KUBECONFIG)
    return kubeConfigFromFile(settings.ARGOCD_KUBECONFIG, undefined, 'ARGOCD_KUBECONFIG');
  if (composition.hubKubeConfig) return composition.hubKubeConfig;
  throw new Error('the hub is not a Kubernetes cluster: set ARGOCD_KUBECONFIG_SECRET_ARN to reach Argo CD');
}

/**
 * The deps of this container, from the environment, built on first use: the hub client, Argo CD's cluster
 * and the configuration's parts load with the first invocation, not at initialisation.
 */
function depsFromEnvironment(): () => Promise<ArgoCdDeps> {
  return memoizeUntilFailure(async () => {
    const [{ compose }, { ArgoCdClusters }, { readHubGuard, TRUSTED_HUB }] = await Promise.all([
      import('../../../adapters/compose/compose.ts'),
      import('./ArgoCdClusters.ts'),
      import('../../../adapters/hub/hubPolicy.ts'),
    ]);
    const settings = argoCdSettings();
    const composition = await compose(configFromEnvironment(), []);
    const clusters = new ArgoCdClusters(await argoKubeConfig(settings, composition), {
      namespace: settings.ARGOCD_NAMESPACE,
      command: settings.ARGOCD_CREDENTIALS_COMMAND,
      extraArgs: settings.ARGOCD_CREDENTIALS_ARGS,
      manager: composition.settings.options.manager,
      ...(composition.settings.options.localClouds
        ? { localClouds: composition.settings.options.localClouds }
        : {}),
    });
    const manager = composition.settings.options.manager;
    const hubKubeConfig = composition.hubKubeConfig;
    const guard: () => Promise<HubGuard> =
      settings.ARGOCD_UNGUARDED_HUB === 'trust'
        ? async () => TRUSTED_HUB
        : hubKubeConfig
          ? async () => readHubGuard(await hubKubeConfig(), manager)
          : async () => ({
              unguarded: async () =>
                'the hub is not a Kubernetes cluster: no admission policy keeps others from writing its profiles (ARGOCD_UNGUARDED_HUB=trust to act on them all the same)',
            });
    return {
      composition,
      clusters,
      guard,
      missingGraceMillis: settings.ARGOCD_MISSING_PROFILE_GRACE_MINUTES * 60_000,
    };
  });
}

/** How many times one event follows its profile when the hub changes it while its Secret is written. */
const FOLLOW_ROUNDS = 5;

/** Whether two readings of a profile are one object at one version (or both its absence). */
const sameReading = (a: ClusterProfile | undefined, b: ClusterProfile | undefined) =>
  a === undefined || b === undefined
    ? a === b
    : a.metadata.uid === b.metadata.uid && a.metadata.resourceVersion === b.metadata.resourceVersion;

/**
 * What one event did to the Secrets. An event is only a notification: anyone allowed to put events on the
 * bus can send one that looks like cpsync's, so the profile is always read from the hub (never taken from
 * the event), and only profiles of the configured manager in one of its inventory namespaces are acted on —
 * those whose manager label, `spec.clusterManager.name` and provider id annotation all say so (untrustedReason).
 *
 * EventBridge invokes the subscriber for several events at once, in any order, so another invocation may write the
 * same Secret from a newer reading of the hub while this one reads and writes. The hub is read again once the
 * Secret is written: when the profile changed meanwhile, the Secret follows the new reading, and a Secret this
 * invocation made from a profile gone since is taken back (unless written again since).
 */
async function apply(
  deps: ArgoCdDeps,
  guard: HubGuard,
  event: CpsyncEventBridgeEvent,
): Promise<{ outcome: Outcome; reason?: string }> {
  const { options } = deps.composition.settings;
  if (!('namespace' in event.detail))
    return { outcome: 'skipped', reason: `${event['detail-type']} does not concern Argo CD` };
  const { namespace, name } = event.detail;
  const { inventoryNamespaces } = await import('../../../core/domain/options.ts');
  if (!inventoryNamespaces(options).some((ns) => ns.name === namespace))
    return { outcome: 'skipped', reason: `${namespace} is not an inventory namespace of this configuration` };
  const detailType = event['detail-type'];
  if (!CHANGES.has(detailType))
    return { outcome: 'skipped', reason: `${detailType} does not concern Argo CD` };
  const ref = { namespace, name };
  return follow(deps, guard, ref, await readProfile(deps, ref), detailType === DetailType.Deleted);
}

/**
 * The profile `ref` as the subscriber takes the hub's reading: one cpsync deleted (held by another controller's
 * finalizer: its cluster gone or placed elsewhere, and cpsync never writes it again) is a profile gone; one another
 * writer deleted is still its cluster's (cpsync deletes it in turn, marking it, once it would).
 */
async function readProfile(
  deps: ArgoCdDeps,
  ref: { namespace: string; name: string },
): Promise<ClusterProfile | undefined> {
  return live(await deps.composition.ports.hub.get(ref));
}

/** Why a profile another writer deleted gets no Secret made, and keeps the one it has. */
const HELD_BY_ANOTHER =
  'being deleted by another writer, held by a finalizer: its Secret written from it stays as it is, none is made';

function live(profile: ClusterProfile | undefined): ClusterProfile | undefined {
  return profile === undefined || deletedByCpsync(profile) ? undefined : profile;
}

/** The change events that concern Argo CD. */
const CHANGES = new Set<string>([
  DetailType.Created,
  DetailType.Updated,
  DetailType.Announced,
  DetailType.Deleted,
]);

/**
 * The Secret of the profile `ref` made to follow the hub from the reading `current`: written (or, `deleted`,
 * removed) as that reading says, then the hub read again; while the profile changed meanwhile, once more from the
 * new reading, and a Secret made from a profile gone since taken back (unless written again since).
 */
async function follow(
  deps: ArgoCdDeps,
  guard: HubGuard,
  ref: { namespace: string; name: string },
  current: ClusterProfile | undefined,
  deleted: boolean,
): Promise<{ outcome: Outcome; reason?: string }> {
  for (let round = 1; ; round += 1) {
    const { created, ...result } = await applyReading(deps, guard, ref, current, deleted);
    const after = await readProfile(deps, ref);
    if (sameReading(current, after)) return result;
    if (after === undefined && created) await deps.clusters.takeBack(created);
    if (round === FOLLOW_ROUNDS)
      throw new Error(
        `${ref.namespace}/${ref.name} changed in the hub ${FOLLOW_ROUNDS} times while its Secret was written: left for the next try`,
      );
    current = after;
  }
}

/**
 * What a change does to the Secrets with its profile as `current` reads it (undefined: not in the hub); `deleted`:
 * the change is the profile's deletion.
 */
async function applyReading(
  deps: ArgoCdDeps,
  guard: HubGuard,
  { namespace, name }: { namespace: string; name: string },
  current: ClusterProfile | undefined,
  deleted: boolean,
): Promise<{ outcome: Outcome; reason?: string; created?: CreatedSecret }> {
  const { options } = deps.composition.settings;
  const untrusted = current && untrustedReason(current, options.manager);
  if (untrusted) return { outcome: 'skipped', reason: untrusted };
  // Where others may write profiles, even one that looks like cpsync's may be theirs: nothing is written from it (a
  // Secret made while it was guarded stays as it was).
  const unguarded = current && (await guard.unguarded(namespace));
  if (unguarded) {
    const released = await deps.clusters.release(current);
    return {
      outcome: 'skipped',
      reason: `${namespace}/${name}: ${unguarded}${released.outcome === 'deleted' ? ' (its Secret, not written while guarded, removed)' : ''}`,
    };
  }
  // Deleted by another writer and held by a finalizer: still its cluster's, but nothing is made from it (a profile an
  // earlier cpsync deleted carries no mark either): the Secret written from it while guarded stays as it is.
  if (current?.metadata.deletionTimestamp !== undefined) {
    const released = await deps.clusters.release(current, guard.trusted);
    return {
      outcome: 'skipped',
      reason: `${namespace}/${name}: ${HELD_BY_ANOTHER}${released.outcome === 'deleted' ? ' (a Secret not written from it removed)' : ''}`,
    };
  }
  const writtenUnder = guard.trusted ? 'trusted' : 'guarded';
  // Written as the hub has it now, whatever the change (a deleted profile made again since: kept, as it is now).
  if (current) return deps.clusters.upsert(current, { newest: true, writtenUnder });
  if (!deleted) return { outcome: 'absent', reason: 'the profile is not in the hub' };
  // A profile of this name in another inventory namespace holds the same Secret: the cluster placed there since (a
  // namespace rule or a tag changed), which keeps its profile's name, or another cluster named alike, which the Secret
  // goes to once this profile is gone (as an event or reconcile of it would do). The Secret is written from it,
  // never removed in between: the Deleted event of the old place may come before the new place's Created, and an
  // ApplicationSet would take the cluster's Applications away with a Secret that went for a moment.
  const { inventoryNamespaces } = await import('../../../core/domain/options.ts');
  for (const { name: elsewhere } of inventoryNamespaces(options)) {
    if (elsewhere === namespace) continue;
    const moved = await readProfile(deps, { namespace: elsewhere, name });
    // A projected copy is no place of the cluster's: its Secret is made from the cluster's own profile only.
    if (moved && !moved.metadata.labels?.[LABEL_PROJECTED_FROM] && !untrustedReason(moved, options.manager))
      return applyReading(deps, guard, { namespace: elsewhere, name }, moved, false);
  }
  return deps.clusters.remove(
    namespace,
    name,
    async () => (await readProfile(deps, { namespace, name })) === undefined,
  );
}

/**
 * Every managed Secret rebuilt from the hub's inventory: those of profiles in namespaces the hub guards; of the others,
 * each skipped with the reason, only the Secrets written while guarded from that very profile are kept as they are.
 */
async function reconcile(
  deps: ArgoCdDeps,
  guard: HubGuard,
): Promise<ReconcileReport & { malformed: number }> {
  const { inventoryProfiles } = await import('../../../core/sync/engine.ts');
  const inventory = await inventoryProfiles(deps.composition.ports.hub, deps.composition.settings.options);
  const { malformed } = inventory;
  // A profile cpsync deleted is one gone: its Secret is judged as a missing profile's.
  const profiles = inventory.profiles.filter((p) => live(p) !== undefined);
  const reasons = new Map<string, string | undefined>();
  const { inventoryNamespaces } = await import('../../../core/domain/options.ts');
  const namespaces = new Set([
    ...inventoryNamespaces(deps.composition.settings.options).map((n) => n.name),
    ...profiles.map((p) => p.metadata.namespace!),
  ]);
  for (const namespace of namespaces) reasons.set(namespace, await guard.unguarded(namespace));
  // Held as they are: the profiles of unguarded namespaces, and those another writer deleted.
  const whyHeld = (p: ClusterProfile) =>
    reasons.get(p.metadata.namespace!) ??
    (p.metadata.deletionTimestamp !== undefined ? HELD_BY_ANOTHER : undefined);
  const guarded = profiles.filter((p) => !whyHeld(p));
  const held = profiles.filter((p) => whyHeld(p));
  const hub = deps.composition.ports.hub;
  const keyOf = (p: ClusterProfile) => `${p.metadata.namespace}/${p.metadata.name}`;
  const refOf = (key: string) => {
    const [namespace, name] = key.split('/');
    return { namespace: namespace!, name: name! };
  };
  const created = new Map<string, CreatedSecret>();
  const report = await deps.clusters.reconcile(guarded, {
    held,
    writtenUnder: guard.trusted ? 'trusted' : 'guarded',
    guardedNamespaces: new Set([...namespaces].filter((namespace) => !reasons.get(namespace))),
    ...(deps.missingGraceMillis !== undefined ? { missingGraceMillis: deps.missingGraceMillis } : {}),
    ...(deps.concurrency !== undefined ? { concurrency: deps.concurrency } : {}),
    stillAsSeen: async (profile, seen) => sameReading(seen, await readProfile(deps, refOf(profile))),
    onCreated: (profile, secret) => created.set(keyOf(profile), secret),
  });
  // The hub read again: a profile it changed while the Secrets were written is followed as its event would be (a
  // Secret written from an older reading is set right now, not at the next reconcile), and a Secret made here from a
  // profile gone since is taken back (one that was there before stays for the grace).
  const before = new Map(profiles.map((p) => [keyOf(p), p]));
  const after = new Map(
    (await inventoryProfiles(hub, deps.composition.settings.options)).profiles
      .filter((p) => live(p) !== undefined)
      .map((p) => [keyOf(p), p]),
  );
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    const now = after.get(key);
    if (sameReading(before.get(key), now)) continue;
    if (now) await follow(deps, guard, refOf(key), now, false);
    else if (created.has(key)) await deps.clusters.takeBack(created.get(key)!);
  }
  for (const { profile, since } of report.missing)
    logger.info('profile missing from the hub: its Secret kept until the grace is over', { profile, since });
  for (const profile of profiles) {
    const why = whyHeld(profile);
    if (why) report.skipped.push({ profile: keyOf(profile), reason: `${keyOf(profile)}: ${why}` });
  }
  for (const conflict of report.conflicts)
    logger.warn('Secret not managed by cpsync left alone', { conflict });
  return { ...report, malformed: malformed.length };
}

const Reconcile = z.object({ reconcile: z.literal(true) });

export function makeArgoCdSubscriber(getDeps: () => Promise<ArgoCdDeps> = depsFromEnvironment()) {
  let idempotent:
    ((event: CpsyncEventBridgeEvent) => Promise<{ outcome: Outcome; reason?: string }>) | undefined;
  let idempotencyConfig: IdempotencyConfig | undefined;
  const once = async (deps: ArgoCdDeps) => {
    if (idempotent) return idempotent;
    const work = async (event: CpsyncEventBridgeEvent) => apply(deps, await deps.guard(), event);
    const table = argoCdSettings().ARGOCD_IDEMPOTENCY_TABLE;
    if (!table) return (idempotent = work);
    const [{ IdempotencyConfig, makeIdempotent }, { DynamoDBPersistenceLayer }] = await Promise.all([
      import('@aws-lambda-powertools/idempotency'),
      import('@aws-lambda-powertools/idempotency/dynamodb'),
    ]);
    idempotencyConfig = new IdempotencyConfig({
      eventKeyJmesPath: 'detail.eventId',
      throwOnNoIdempotencyKey: true,
    });
    return (idempotent = makeIdempotent(work, {
      persistenceStore: new DynamoDBPersistenceLayer({ tableName: table }),
      config: idempotencyConfig,
      keyPrefix: 'cpsync.argocd',
    }));
  };
  return withPowertools(async (input: unknown, context: Context) => {
    const deps = await getDeps();
    if (Reconcile.safeParse(input).success) {
      const report = await reconcile(deps, await deps.guard());
      logger.info('reconciled the Argo CD cluster Secrets with the inventory', { ...report });
      metrics.addMetric('SecretsWritten', MetricUnit.Count, report.created + report.updated);
      metrics.addMetric('SecretsDeleted', MetricUnit.Count, report.deleted);
      if (report.failed.length > 0) {
        metrics.addMetric('SecretWritesFailed', MetricUnit.Count, report.failed.length);
        // Failed once every other Secret is set right and the stale ones removed: the schedule's retry, or the next
        // reconcile, writes these again.
        throw new Error(
          `could not write the Argo CD cluster Secret of ${report.failed.length} profile(s): ${report.failed
            .map(({ profile, reason }) => `${profile} (${reason})`)
            .join('; ')}`,
        );
      }
      return report;
    }
    // An event that is not a cpsync event of this major: an error naming what is wrong (retried, then the DLQ).
    const event = parseCpsyncEvent(input);
    const work = await once(deps);
    idempotencyConfig?.registerLambdaContext(context);
    const result = await work(event);
    logger.info('applied an inventory event to Argo CD', {
      detailType: event['detail-type'],
      profile: 'namespace' in event.detail ? `${event.detail.namespace}/${event.detail.name}` : undefined,
      eventId: event.detail.eventId,
      ...result,
    });
    metrics.addMetric(
      `Secrets${result.outcome[0]!.toUpperCase()}${result.outcome.slice(1)}`,
      MetricUnit.Count,
      1,
    );
    return result;
  });
}

export const handler = makeArgoCdSubscriber();
