/**
 * Argo CD's cluster Secrets that cpsync manages, on the cluster Argo CD runs on: written from profiles,
 * deleted when their profile is gone, and reconciled as a whole against the inventory. Only Secrets
 * labelled `app.kubernetes.io/managed-by: cpsync` are ever changed or deleted; a Secret of the same name
 * made by hand is left alone and reported.
 */
import { CoreV1Api, type KubeConfig, type V1Secret } from '@kubernetes/client-node';
import pLimit from 'p-limit';
import { translate } from '../../../adapters/hub/KubernetesHub.ts';
import { canonicalJson } from '../../../core/domain/json.ts';
import {
  ANNOTATION_PROVIDER_ID,
  DEFAULT_MANAGER,
  LABEL_CLUSTER_MANAGER,
  LABEL_PROVIDER,
} from '../../../core/domain/constants.ts';
import { isProvider } from '../../../core/domain/model/observedCluster.ts';
import { sameProviderId } from '../../../core/domain/naming.ts';
import type { ClusterProfile } from '../../../core/domain/model/clusterProfile.ts';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  PROFILE_ANNOTATION,
  PROFILE_MISSING_SINCE_ANNOTATION,
  PROFILE_UID_ANNOTATION,
  PROFILE_VERSION_ANNOTATION,
  SECRET_TYPE_LABEL,
  WRITTEN_UNDER_ANNOTATION,
  clusterSecretOf,
  isManagersSecret,
  secretNameOf,
  type ClusterSecret,
  type SecretOptions,
  type WrittenUnder,
} from './clusterSecret.ts';

export type Outcome =
  'created' | 'updated' | 'unchanged' | 'deleted' | 'absent' | 'stale' | 'skipped' | 'conflict';

/** A Secret as this subscriber created it: its name and the resourceVersion the create gave it. */
export interface CreatedSecret {
  name: string;
  resourceVersion: string;
}

export interface ReconcileReport {
  created: number;
  updated: number;
  unchanged: number;
  deleted: number;
  skipped: Array<{ profile: string; reason: string }>;
  conflicts: string[];
  /** Profiles missing from the hub whose Secrets are kept until they have been missing for the grace, and since when. */
  missing: Array<{ profile: string; since: string }>;
  /**
   * Profiles whose Secret could not be written (the API refused or failed the write), and why: each Secret is left
   * as it was, the others are written and the stale ones removed all the same.
   */
  failed: Array<{ profile: string; reason: string }>;
}

/** How long a profile may be missing from the hub before its Secret goes (see `reconcile`). */
const DEFAULT_MISSING_GRACE_MILLIS = 60 * 60_000;

function status(error: unknown): number | undefined {
  const e = error as { code?: number; statusCode?: number; response?: { statusCode?: number } };
  return e?.code ?? e?.statusCode ?? e?.response?.statusCode;
}

/** Whether `a` is an older resourceVersion than `b` (both decimal, as etcd's are; otherwise not judged). */
function older(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b || !/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return BigInt(a) < BigInt(b);
}

/** What a Secret says, leaving out what changes with every profile write (its resourceVersion). */
function content(secret: Pick<V1Secret, 'data' | 'metadata'>) {
  const annotations = { ...secret.metadata?.annotations };
  delete annotations[PROFILE_VERSION_ANNOTATION];
  return canonicalJson([secret.data ?? {}, secret.metadata?.labels ?? {}, annotations]);
}

/**
 * Readings of a Secret a change judges before it leaves the event to be tried again: each one overtaken (made,
 * written or removed by another invocation, or for another profile of the name, between its reading and the write).
 */
const READINGS = 5;

/** Whether a write was refused for what happened to the Secret since it was read (409: written or made; 404: gone). */
const overtaken = (error: unknown) => status(error) === 409 || status(error) === 404;

/** A change that found the Secret changed at every one of its readings: its event is tried again later. */
const changedThroughout = (namespace: string, name: string) =>
  new Error(
    `the Secret of ${namespace}/${name} changed ${READINGS} times while it was judged; tried again later`,
  );

/** Whether `secret` is `manager`'s, made from the profile `namespace/name`. */
const madeFrom = (
  secret: V1Secret,
  manager: string,
  namespace: string,
  name: string,
): secret is V1Secret & { metadata: NonNullable<V1Secret['metadata']> } =>
  isManagersSecret(secret, manager) &&
  secret.metadata?.annotations?.[PROFILE_ANNOTATION] === `${namespace}/${name}`;

export class ArgoCdClusters {
  readonly #kubeConfig: () => Promise<KubeConfig>;
  readonly #options: SecretOptions;
  readonly #manager: string;
  #client?: { kubeConfig: KubeConfig; api: CoreV1Api };

  /** `kubeConfig`: a function for credentials that are renewed (an EKS hub's token). */
  constructor(kubeConfig: KubeConfig | (() => Promise<KubeConfig>), options: SecretOptions) {
    this.#kubeConfig = typeof kubeConfig === 'function' ? kubeConfig : async () => kubeConfig;
    this.#options = options;
    this.#manager = options.manager ?? DEFAULT_MANAGER;
  }

  /** The API client of the current client configuration (made again when it is renewed). */
  async #api(): Promise<CoreV1Api> {
    const kubeConfig = await this.#kubeConfig();
    if (this.#client?.kubeConfig !== kubeConfig)
      this.#client = { kubeConfig, api: kubeConfig.makeApiClient(CoreV1Api) };
    return this.#client.api;
  }

  async #read(name: string): Promise<V1Secret | undefined> {
    const api = await this.#api();
    try {
      return await api.readNamespacedSecret({ name, namespace: this.#options.namespace });
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw error;
    }
  }

  /**
   * Writes `profile`'s Secret. An event older than what the Secret was made from (same profile uid, lower
   * resourceVersion) changes nothing: events may arrive out of order.
   */
  async upsert(
    profile: ClusterProfile,
    { newest = false, writtenUnder = 'guarded' }: { newest?: boolean; writtenUnder?: WrittenUnder } = {},
  ): Promise<{ outcome: Outcome; reason?: string; created?: CreatedSecret }> {
    const made = clusterSecretOf(profile, this.#options);
    if ('skipped' in made) return { outcome: 'skipped', reason: made.skipped };
    const wanted = made.secret;
    wanted.metadata.annotations[WRITTEN_UNDER_ANNOTATION] = writtenUnder;
    const api = await this.#api();
    for (let reading = 1; ; reading++) {
      const existing = await this.#read(wanted.metadata.name);
      try {
        return await this.#writeOver(api, profile, wanted, existing, newest);
      } catch (error) {
        // Overtaken: made, written or removed since it was read (another invocation, or another profile of the
        // name): judged again as it is then.
        if (!overtaken(error) || reading >= READINGS) throw error;
      }
    }
  }

  /** Writes `wanted`, the Secret of `profile`, over `existing` as read (undefined: none), if it is its to write. */
  async #writeOver(
    api: CoreV1Api,
    profile: ClusterProfile,
    wanted: ClusterSecret,
    existing: V1Secret | undefined,
    newest: boolean,
  ): Promise<{ outcome: Outcome; reason?: string; created?: CreatedSecret }> {
    if (!existing) {
      const created = await api.createNamespacedSecret({
        namespace: this.#options.namespace,
        body: wanted as V1Secret,
      });
      return {
        outcome: 'created',
        created: { name: wanted.metadata.name, resourceVersion: created.metadata!.resourceVersion! },
      };
    }
    if (existing.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY)
      return {
        outcome: 'conflict',
        reason: `Secret ${wanted.metadata.name} exists and is not managed by cpsync`,
      };
    if (!isManagersSecret(existing, this.#manager))
      return {
        outcome: 'conflict',
        reason: `Secret ${wanted.metadata.name} is the cluster of another manager (${existing.metadata?.labels?.[LABEL_CLUSTER_MANAGER] ?? `an earlier version's Secret, of a profile not under a name ${this.#manager} gives its cluster`}), not ${this.#manager}'s`,
      };
    // Profiles of one name in two inventory namespaces would share the Secret, and so the Argo CD cluster. Of one
    // cluster (a projection, or the cluster placed in another namespace since), either writes it, as before. Of two
    // clusters, the Secret stays the one profile's it was made from while that Secret lasts, never moved to the other.
    const madeOf = existing.metadata?.annotations?.[PROFILE_ANNOTATION];
    const profileKey = wanted.metadata.annotations[PROFILE_ANNOTATION];
    const clusterOf = (secret: Pick<V1Secret, 'metadata'>) =>
      secret.metadata?.annotations?.[ANNOTATION_PROVIDER_ID];
    const provider = profile.metadata.labels?.[LABEL_PROVIDER];
    const sameCluster =
      clusterOf(existing) !== undefined &&
      clusterOf(wanted) !== undefined &&
      isProvider(provider) &&
      sameProviderId(provider, clusterOf(existing)!, clusterOf(wanted)!);
    if (madeOf !== undefined && madeOf !== profileKey && !sameCluster)
      return {
        outcome: 'conflict',
        reason: `Secret ${wanted.metadata.name} is the Argo CD cluster of the profile ${madeOf}; ${profileKey}, of the same name in another namespace, gets none while it lasts`,
      };
    const stored = existing.metadata?.annotations ?? {};
    // A Secret made before Secrets named their manager is written over whatever it says of its profile: anyone who could
    // write Secrets there could have made it, so it is taken from the hub's reading alone.
    const unnamed = existing.metadata?.labels?.[LABEL_CLUSTER_MANAGER] === undefined;
    if (
      !newest &&
      !unnamed &&
      stored[PROFILE_UID_ANNOTATION] === wanted.metadata.annotations[PROFILE_UID_ANNOTATION] &&
      older(wanted.metadata.annotations[PROFILE_VERSION_ANNOTATION], stored[PROFILE_VERSION_ANNOTATION])
    )
      return { outcome: 'stale' };
    if (content(existing) === content(wanted as V1Secret)) return { outcome: 'unchanged' };
    await api.replaceNamespacedSecret({
      name: wanted.metadata.name,
      namespace: this.#options.namespace,
      body: {
        ...wanted,
        metadata: { ...wanted.metadata, resourceVersion: existing.metadata!.resourceVersion! },
      } as V1Secret,
    });
    return { outcome: 'updated' };
  }

  /**
   * Keeps the Secret of `profile` only if it was written while the profile's namespace was guarded, from this very
   * profile (its uid); else deletes it (one written while the hub was trusted, or before the hub was judged at all,
   * may have been made from a profile someone else wrote).
   */
  async release(profile: ClusterProfile, trusted = false): Promise<{ outcome: Outcome }> {
    const { namespace, name } = profile.metadata;
    for (let reading = 1; reading <= READINGS; reading++) {
      const existing = await this.#read(secretNameOf(name!));
      if (
        !existing ||
        this.#held(existing, new Map([[`${namespace}/${name}`, profile.metadata.uid]]), trusted)
      )
        return { outcome: 'unchanged' };
      if (!madeFrom(existing, this.#manager, namespace!, name!)) return { outcome: 'conflict' };
      // Only as it was read: one written since is judged again.
      if (await this.#deleteAsRead(existing.metadata.name!, existing.metadata.resourceVersion!, [404, 409]))
        return { outcome: 'deleted' };
    }
    // Written again at every reading: the event is tried again.
    throw changedThroughout(namespace!, name!);
  }

  /**
   * Whether `secret` was written while guarded from one of the profiles `held` (`namespace/name` → uid); `trusted`
   * (the hub's writers trusted still), or while they were trusted.
   */
  #held(secret: V1Secret, held: ReadonlyMap<string, string | undefined>, trusted = false): boolean {
    const annotations = secret.metadata?.annotations ?? {};
    const profile = annotations[PROFILE_ANNOTATION];
    const under = annotations[WRITTEN_UNDER_ANNOTATION];
    return (
      (under === 'guarded' || (trusted && under === 'trusted')) &&
      profile !== undefined &&
      held.has(profile) &&
      held.get(profile) !== undefined &&
      held.get(profile) === annotations[PROFILE_UID_ANNOTATION]
    );
  }

  /**
   * Deletes the Secret of profile `namespace/name`, if cpsync made it from that profile. `stillGone`, asked once the
   * Secret is read and before it is deleted, says whether the profile is still out of the hub: a Secret written from
   * the profile made again since stays (it is deleted only as it was read).
   */
  async remove(
    namespace: string,
    name: string,
    stillGone: () => Promise<boolean> = async () => true,
  ): Promise<{ outcome: Outcome; reason?: string }> {
    for (let reading = 1; reading <= READINGS; reading++) {
      const existing = await this.#read(secretNameOf(name));
      if (!existing) return { outcome: 'absent' };
      if (!madeFrom(existing, this.#manager, namespace, name)) return { outcome: 'conflict' };
      if (!(await stillGone())) return { outcome: 'unchanged', reason: 'the profile is in the hub again' };
      // Only as it was read: one written or removed since is judged again.
      if (await this.#deleteAsRead(existing.metadata.name!, existing.metadata.resourceVersion!, [404, 409]))
        return { outcome: 'deleted' };
    }
    throw changedThroughout(namespace, name);
  }

  /**
   * Deletes the Secret `name` only as it was at `resourceVersion`: whether it went. An answer whose status is one of
   * `left` (404: gone already; 409: written since) leaves it; any other failure is thrown.
   */
  async #deleteAsRead(name: string, resourceVersion: string, left: readonly number[]): Promise<boolean> {
    const api = await this.#api();
    try {
      await api.deleteNamespacedSecret({
        name,
        namespace: this.#options.namespace,
        body: { preconditions: { resourceVersion } },
      });
      return true;
    } catch (error) {
      if (left.includes(status(error) ?? 0)) return false;
      throw error;
    }
  }

  /**
   * Deletes the Secret `name` only as `created` made it (nothing has written it since): true when it went, false
   * when it changed or went meanwhile.
   */
  takeBack(created: CreatedSecret): Promise<boolean> {
    return this.#deleteAsRead(created.name, created.resourceVersion, [404, 409]);
  }

  /** Marks `secret` as missing its profile since `at`; false when it changed or went meanwhile (judged next time). */
  async #markMissing(secret: V1Secret, at: string): Promise<boolean> {
    const api = await this.#api();
    try {
      await api.patchNamespacedSecret({
        name: secret.metadata!.name!,
        namespace: this.#options.namespace,
        body: [
          { op: 'test', path: '/metadata/resourceVersion', value: secret.metadata!.resourceVersion! },
          {
            op: 'add',
            path: `/metadata/annotations/${PROFILE_MISSING_SINCE_ANNOTATION.replace('/', '~1')}`,
            value: at,
          },
        ],
      });
      return true;
    } catch (error) {
      if (status(error) === 404 || status(error) === 409 || status(error) === 422) return false;
      throw error;
    }
  }

  /** The cluster Secrets cpsync manages for this manager (see `isManagersSecret`). */
  async managed(): Promise<V1Secret[]> {
    const api = await this.#api();
    const list = await api.listNamespacedSecret({
      namespace: this.#options.namespace,
      labelSelector: `${SECRET_TYPE_LABEL}=cluster,${MANAGED_BY_LABEL}=${MANAGED_BY}`,
    });
    return list.items.filter((secret) => isManagersSecret(secret, this.#manager));
  }

  /**
   * Makes the managed Secrets exactly those of `profiles` (the whole inventory, read from the hub), written as
   * `writtenUnder`; the Secrets of the profiles `held` are kept as they are, neither written nor removed, when they
   * were written while guarded from that very profile (see `release`), and removed otherwise. A Secret whose profile
   * is missing from the hub altogether — written while guarded, and its namespace guarded still (one of
   * `guardedNamespaces`), or written while the hub's writers are trusted and still so — goes only once it has been
   * missing for `missingGraceMillis`: whoever may
   * delete a profile (the hub's admission policy guards writes, not deletions) must not empty Argo CD of a cluster
   * that still exists — which would let an ApplicationSet delete its Applications — and cpsync writes the profile
   * again at its next sync. (A Deleted event of cpsync's, confirmed by the hub, removes the Secret at once.)
   */
  async reconcile(
    profiles: readonly ClusterProfile[],
    {
      held = [],
      writtenUnder = 'guarded',
      missingGraceMillis = DEFAULT_MISSING_GRACE_MILLIS,
      guardedNamespaces = new Set<string>(),
      now = Date.now(),
      stillAsSeen = async () => true,
      onCreated = () => {},
      concurrency = 8,
    }: {
      held?: readonly ClusterProfile[];
      writtenUnder?: WrittenUnder;
      missingGraceMillis?: number;
      /** Inventory namespaces the hub guards now: only a Secret of theirs is kept for the grace. */
      guardedNamespaces?: ReadonlySet<string>;
      now?: number;
      /**
       * Whether the hub still reads the profile `namespace/name` as `seen` (undefined: not in the hub), asked once its
       * Secret is listed and before it is deleted: a Secret is deleted only on a judgement the hub still bears out (a
       * profile made or written since keeps the Secret written from it, for the next look to judge).
       */
      stillAsSeen?: (profile: string, seen: ClusterProfile | undefined) => Promise<boolean>;
      /** Told of each Secret this reconcile created, and the profile it made it from. */
      onCreated?: (profile: ClusterProfile, created: CreatedSecret) => void;
      /** Secrets read or written at once. */
      concurrency?: number;
    } = {},
  ): Promise<ReconcileReport> {
    const report: ReconcileReport = {
      created: 0,
      updated: 0,
      unchanged: 0,
      deleted: 0,
      skipped: [],
      conflicts: [],
      missing: [],
      failed: [],
    };
    const seen = new Map<string, ClusterProfile>(
      [...profiles, ...held].map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p]),
    );
    const present = new Set(seen.keys());
    const wanted = new Set<string>();
    const holding = new Map(
      held.map((p) => [`${p.metadata.namespace}/${p.metadata.name}`, p.metadata.uid] as const),
    );
    const limit = pLimit(concurrency);
    await Promise.all(
      profiles.map((profile) =>
        limit(async () => {
          const key = `${profile.metadata.namespace}/${profile.metadata.name}`;
          const made = clusterSecretOf(profile, this.#options);
          if ('skipped' in made) {
            report.skipped.push({ profile: key, reason: made.skipped });
            return;
          }
          let written: Awaited<ReturnType<ArgoCdClusters['upsert']>>;
          try {
            written = await this.upsert(profile, { newest: true, writtenUnder });
          } catch (error) {
            // Its Secret stays as it was (never taken for a stale one below); the others go on.
            wanted.add(made.secret.metadata.name);
            const secret = `Secret ${this.#options.namespace}/${made.secret.metadata.name}`;
            report.failed.push({ profile: key, reason: translate(error, 'write', secret).message });
            return;
          }
          const { outcome, reason, created } = written;
          // A Secret another profile holds is not this one's to keep: it is judged by its own profile below.
          if (outcome !== 'conflict') wanted.add(made.secret.metadata.name);
          if (created) onCreated(profile, created);
          if (outcome === 'created' || outcome === 'updated' || outcome === 'unchanged') report[outcome]++;
          else if (outcome === 'conflict') report.conflicts.push(reason ?? key);
        }),
      ),
    );
    for (const secret of await this.managed()) {
      if (wanted.has(secret.metadata!.name!) || this.#held(secret, holding, writtenUnder === 'trusted'))
        continue;
      const profile = secret.metadata?.annotations?.[PROFILE_ANNOTATION];
      // Kept for the grace only what would be kept were its profile there: a Secret made while the hub's writers were
      // trusted, or in a namespace no longer guarded, may be of a profile someone else wrote and then deleted.
      const keepable = (of: string) =>
        writtenUnder === 'trusted' ||
        (secret.metadata?.annotations?.[WRITTEN_UNDER_ANNOTATION] === 'guarded' &&
          guardedNamespaces.has(of.split('/')[0]!));
      if (profile !== undefined && !present.has(profile) && missingGraceMillis > 0 && keepable(profile)) {
        const marked = secret.metadata?.annotations?.[PROFILE_MISSING_SINCE_ANNOTATION];
        const since = marked !== undefined && /^\d{4}-/.test(marked) ? Date.parse(marked) : Number.NaN;
        // Missing since a time to come (a clock or a hand gone wrong) counts from now.
        if (Number.isNaN(since) || since > now) {
          const at = new Date(now).toISOString();
          if (await limit(() => this.#markMissing(secret, at))) report.missing.push({ profile, since: at });
          continue;
        }
        if (now - since < missingGraceMillis) {
          report.missing.push({ profile, since: marked! });
          continue;
        }
      }
      if (profile !== undefined && !(await limit(() => stillAsSeen(profile, seen.get(profile))))) continue;
      // Gone, or written again since it was listed: judged at the next look.
      if (
        await limit(() =>
          this.#deleteAsRead(secret.metadata!.name!, secret.metadata!.resourceVersion!, [404, 409]),
        )
      )
        report.deleted++;
    }
    return report;
  }
}
