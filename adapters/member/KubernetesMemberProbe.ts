/**
 * The member probe (the `memberProbe` feature): reaches each member cluster the way a consumer does —
 * the server and CA of the profile's access provider, a token from the same code `cpsync credentials`
 * runs (adapters/credentials/tokens.ts), in process — and reads, read-only:
 *   - discovery (`/apis`), for the `about.k8s.io` version the member serves (v1alpha1, v1beta1, v1, …);
 *   - the ClusterProperty objects labelled `multicluster.x-k8s.io/clusterProfile=true`;
 *   - the `kube-system` namespace (its UID: KEP-2149's recommended cluster id);
 *   - the CustomResourceDefinitions (their groups).
 * Each member has one deadline for all of it, and a bounded number are read at once. A member that
 * cannot be read is a reading that says why; nothing else of its profile changes.
 */
import {
  ApiException,
  ApiextensionsV1Api,
  ApisApi,
  CoreV1Api,
  CustomObjectsApi,
} from '@kubernetes/client-node';
import pLimit from 'p-limit';
import type { MemberPacing, MemberReading } from '../../core/domain/member.ts';
import { providerIdOf } from '../../core/domain/member.ts';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { DeadlineError, InterruptedError, withDeadline } from '../../core/sync/deadline.ts';
import type { MemberProbe } from '../../core/sync/ports.ts';
import { messageOf } from '../../core/domain/errors.ts';
import { cut } from '../../core/domain/text.ts';
import { MemberAccessError, memberConnection, type MemberAccess } from './connection.ts';
import { PageTokens } from '../shared/pages.ts';

/** The label a member's ClusterProperty carries when ClusterProfiles are to copy it (KEP-4322). */
const CLUSTER_PROFILE_PROPERTY_LABEL = 'multicluster.x-k8s.io/clusterProfile';
const ABOUT_GROUP = 'about.k8s.io';
const CRD_PAGE = 500;

export interface MemberProbeOptions extends MemberAccess {
  /** One member's reading, every request included. */
  timeoutMillis: number;
  /** Members read at once. */
  concurrency: number;
  /**
   * All the reading of one call (a scope's members): what is not read by then is left for a later run (the
   * profile keeps what it carries), so that probing never holds a scope past its function's time.
   */
  budgetMillis: number;
  pacing: MemberPacing;
}

class Unreadable extends Error {
  readonly reason: string;
  constructor(reason: string, message: string) {
    super(message);
    this.reason = reason;
  }
}

/**
 * An error's text without what changes on every attempt (Entra's trace and correlation ids and timestamps),
 * so that the same failure reads the same and writes nothing again.
 */
function stableText(text: string): string {
  const stable = text
    .replace(/\s*(Trace ID|Correlation ID|Timestamp):.*$/s, '')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>')
    .replace(/\d{4}-\d{2}-\d{2}[T ][\d:.]+Z?/g, '<time>');
  return cut(stable, 300);
}

/** Why a request failed, as the `MemberReachable` condition says it (stable text: an unchanged failure writes nothing). */
function unreadable(error: unknown, what: string): Unreadable {
  if (error instanceof Unreadable) return error;
  if (error instanceof DeadlineError) return new Unreadable('Timeout', error.message);
  if (error instanceof ApiException) {
    const code = error.code;
    const reason = code === 401 ? 'Unauthorized' : code === 403 ? 'Forbidden' : 'Failed';
    return new Unreadable(reason, `${what}: the member answered ${code}`);
  }
  // Why, and where: `fetch failed: connect ECONNREFUSED 10.0.0.7:443` (an address is as stable as the failure).
  return new Unreadable('Unreachable', stableText(`${what}: ${messageOf(error)}`));
}

export class KubernetesMemberProbe implements MemberProbe {
  readonly pacing: MemberPacing;
  readonly #options: MemberProbeOptions;

  constructor(options: MemberProbeOptions) {
    this.#options = options;
    this.pacing = options.pacing;
  }

  async readAll(
    profiles: readonly ClusterProfile[],
    signal?: AbortSignal,
  ): Promise<Map<string, MemberReading>> {
    const limit = pLimit(this.#options.concurrency);
    const readings = new Map<string, MemberReading>();
    const budget = AbortSignal.timeout(this.#options.budgetMillis);
    const stop = signal ? AbortSignal.any([signal, budget]) : budget;
    await Promise.all(
      profiles.map((profile) =>
        limit(async () => {
          const id = providerIdOf(profile);
          if (id === undefined || stop.aborted) return;
          try {
            readings.set(
              id,
              await withDeadline(
                `reading the member ${profile.metadata.name}`,
                this.#options.timeoutMillis,
                (deadline) => this.#read(profile, deadline),
                stop,
              ),
            );
          } catch (error) {
            // Stopped (the run, or the budget): not read this time, rather than read as failed.
            if (error instanceof InterruptedError) return;
            const failed = unreadable(error, 'reading the member');
            readings.set(id, { reachable: false, reason: failed.reason, message: failed.message });
          }
        }),
      ),
    );
    return readings;
  }

  async #read(profile: ClusterProfile, signal: AbortSignal): Promise<MemberReading> {
    let connection: Awaited<ReturnType<typeof memberConnection>>;
    try {
      connection = await memberConnection(profile, this.#options, signal, stableText);
    } catch (error) {
      if (error instanceof MemberAccessError) throw new Unreadable(error.reason, error.message);
      throw error;
    }
    const { config, options } = connection;
    const step = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
      try {
        return await call();
      } catch (error) {
        if (signal.aborted && signal.reason instanceof Error) throw signal.reason;
        throw unreadable(error, what);
      }
    };

    const groups = await step('discovery', () => config.makeApiClient(ApisApi).getAPIVersions({}, options));
    const about = groups.groups.find((g) => g.name === ABOUT_GROUP);
    const version = about?.preferredVersion?.version ?? about?.versions[0]?.version;
    const properties: Array<{ name: string; value: string }> = [];
    if (version) {
      const list = (await step('listing clusterproperties', () =>
        config.makeApiClient(CustomObjectsApi).listClusterCustomObject(
          {
            group: ABOUT_GROUP,
            version,
            plural: 'clusterproperties',
            labelSelector: `${CLUSTER_PROFILE_PROPERTY_LABEL}=true`,
          },
          options,
        ),
      )) as { items?: Array<{ metadata?: { name?: string }; spec?: { value?: unknown } }> };
      for (const item of list.items ?? []) {
        const value = item.spec?.value;
        if (item.metadata?.name && value !== undefined && value !== null)
          properties.push({
            name: item.metadata.name,
            value: typeof value === 'string' ? value : JSON.stringify(value),
          });
      }
    }
    const kubeSystem = await step('reading namespace kube-system', () =>
      config.makeApiClient(CoreV1Api).readNamespace({ name: 'kube-system' }, options),
    );
    const crdGroups: string[] = [];
    const crds = config.makeApiClient(ApiextensionsV1Api);
    const tokens = new PageTokens("the member's customresourcedefinitions");
    let next: string | undefined;
    do {
      const page = await step('listing customresourcedefinitions', () =>
        crds.listCustomResourceDefinition({ limit: CRD_PAGE, ...(next ? { _continue: next } : {}) }, options),
      );
      for (const crd of page.items)
        if (crd.spec.versions.some((v) => v.served)) crdGroups.push(crd.spec.group);
      next = tokens.next(page.metadata?._continue);
    } while (next);
    return {
      reachable: true,
      properties,
      ...(version ? { clusterPropertyVersion: version } : {}),
      ...(kubeSystem.metadata?.uid ? { kubeSystemUid: kubeSystem.metadata.uid } : {}),
      crdGroups,
    };
  }
}
