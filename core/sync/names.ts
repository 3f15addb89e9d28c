/**
 * Which name each cluster's profile has in each namespace it is placed in (SPEC §3, "Name"). No choice of
 * cloud names can make two clusters share a profile: equal names are found before anything is planned,
 * the profile already on the hub keeps its name, and a newcomer gets a name of its own.
 *
 *   1. A cluster whose profile the hub holds (of this manager, for this cluster's id, under one of the
 *      names the cluster may have, earlier versions' included) keeps that name: a sync never renames.
 *   2. Every other cluster (a newcomer), in the order of its id — never the listing's order — gets the first
 *      of its candidate names that neither another cluster of this run nor any object of the hub holds.
 *      It yields a name only to another of cpsync's clusters the name was made for as well (a collision of
 *      names: it takes its next one; one made so only by an earlier version's fold of case, only to a cluster the
 *      cloud listed in this sync). A name held by anything else blocks the cluster there, unwritten and
 *      named, until the name is free: an object that is not a well-formed profile (left untouched, as
 *      everywhere), a profile of another manager, or one of cpsync's whose name was not made for its cluster.
 *      So a cluster whose profile someone deleted and whose name someone then took is never written under
 *      another name: its profile comes back under its own name once that is free (a sync never renames).
 * What the hub holds decides only which of the cluster's own names it keeps: a name is never taken from
 * the hub for a cluster it was not made for, and the cluster's data goes only under its own names.
 *
 * Scopes of one run are synced at once: the names their newcomers are given go in the run's `NameClaims`
 * before the hub is asked, so that two scopes never give one name to two clusters. (Two runs of other
 * accounts at once are kept apart by the hub itself: its admission policy, and the file hub, refuse to
 * change the cluster a profile is of.)
 */
import { ANNOTATION_PROVIDER_ID, LABEL_CLUSTER_MANAGER, LABEL_PROVIDER } from '../domain/constants.ts';
import { MalformedObjectError } from '../domain/errors.ts';
import { profileKey, type ClusterProfile } from '../domain/model/clusterProfile.ts';
import { isProvider, type ObservedCluster } from '../domain/model/observedCluster.ts';
import { profileProblem } from '../domain/model/validate.ts';
import {
  canonicalProviderId,
  compareOrdinal,
  legacyCanonicalProviderIds,
  sameProviderId,
  type NameScheme,
} from '../domain/naming.ts';
import type { Skipped } from '../domain/plan.ts';
import type { Hub, MalformedObject } from './ports.ts';

/** One profile to be named: a cluster in one of the namespaces it is placed in. */
export interface NameRequest {
  cluster: ObservedCluster;
  namespace: string;
}

export interface NameChoice {
  /** The name of each request's profile, by `nameKey(namespace, cluster)`; absent: not written there. */
  names: Map<string, string>;
  /** Profiles of listed clusters found by name outside the scope's selection: planned against, not created. */
  found: ClusterProfile[];
  /** Objects found under a cluster's name that are not well-formed profiles (left untouched). */
  malformed: MalformedObject[];
  /** Requests given no name: the reason, as the plan reports what it does not write. */
  skipped: Skipped[];
  /** Newcomers that did not get their first name, and why: a run reports each (a look is worth it). */
  collisions: string[];
}

/** Names given to newcomers by the scopes of one run so far (namespace/name → the cluster's canonical id). */
export type NameClaims = Map<string, string>;

/** The key of one profile's name: a namespace and a cluster's canonical id. */
export function nameKey(
  namespace: string,
  cluster: Pick<ObservedCluster, 'provider' | 'providerId'>,
): string {
  return `${namespace}\u0000${canonicalProviderId(cluster)}`;
}

function managedBy(profile: ClusterProfile, manager: string): boolean {
  return (
    profile.metadata.labels?.[LABEL_CLUSTER_MANAGER] === manager &&
    profile.spec?.clusterManager?.name === manager
  );
}

/** Whether `profile` is this manager's profile of `cluster`. */
function profileOf(profile: ClusterProfile, cluster: ObservedCluster, manager: string): boolean {
  const stored = profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
  return (
    managedBy(profile, manager) &&
    stored !== undefined &&
    sameProviderId(cluster.provider, stored, cluster.providerId)
  );
}

/** Who holds a name, in words (a collision's report). */
function holderOf(profile: ClusterProfile, manager: string): string {
  if (!managedBy(profile, manager))
    return `held by a profile of another manager (${JSON.stringify(profile.spec?.clusterManager?.name ?? profile.metadata.labels?.[LABEL_CLUSTER_MANAGER] ?? 'unknown')})`;
  const id = profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
  return id ? `the profile of ${id}` : 'a profile with no provider id';
}

/**
 * Whether a newcomer yields `name`, held by `holder`, and takes its next name: only to another of cpsync's
 * clusters that the name was made for as well (a collision of names; through an earlier version's fold, only one
 * this sync listed: `listed`, canonical ids). Anything else holding a name made for
 * the cluster (another manager's profile, one of cpsync's not written under a name of its own cluster) blocks
 * it there: had it taken its next name, whoever may delete and create profiles could rename it.
 */
function yieldsTo(
  holder: ClusterProfile,
  name: string,
  manager: string,
  scheme: NameScheme,
  listed: ReadonlySet<string>,
): boolean {
  const providerId = holder.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
  const provider = holder.metadata.labels?.[LABEL_PROVIDER];
  if (!managedBy(holder, manager) || providerId === undefined || !isProvider(provider)) return false;
  // An id an earlier version folded otherwise (an Azure id with letters beyond ASCII, lower-cased whole) holds a
  // newcomer's name only through that fold, and a real one is of the newcomer's subscription, listed with it: one no
  // listing of this sync gave (written by someone else with such letters, or of a cluster gone) is yielded nothing,
  // or whoever may write profiles could rename the cluster.
  const holderId = { provider, providerId };
  if (legacyCanonicalProviderIds(holderId).length > 0 && !listed.has(canonicalProviderId(holderId)))
    return false;
  return scheme.madeFor?.(manager, name, { provider, providerId }) ?? true;
}

/**
 * Names every request (see the module's comment). `current` is what the hub holds for the scope (its
 * well-formed profiles), `malformedHere` the objects of the scope that are not; other names are looked up
 * on the hub one by one, only for newcomers.
 */
export async function chooseNames(input: {
  requests: readonly NameRequest[];
  current: readonly ClusterProfile[];
  malformedHere: readonly MalformedObject[];
  hub: Pick<Hub, 'get'>;
  manager: string;
  scheme: NameScheme;
  /** The run's names given so far by its other scopes (shared by them). @default this scope's own */
  claims?: NameClaims;
}): Promise<NameChoice> {
  const { manager, scheme } = input;
  const run = input.claims ?? new Map<string, string>();
  const choice: NameChoice = { names: new Map(), found: [], malformed: [], skipped: [], collisions: [] };
  const held = new Map(input.current.map((p) => [profileKey(p.metadata), p]));
  /** The clusters the cloud listed in this sync, by canonical id: the only ones a newcomer yields a name to. */
  const listed = new Set(input.requests.map((r) => canonicalProviderId(r.cluster)));
  const broken = new Set(input.malformedHere.map(profileKey));
  /** Names given in this run, by namespace/name: the cluster they were given to. */
  const claimed = new Map<string, ObservedCluster>();
  const claim = (request: NameRequest, name: string) => {
    choice.names.set(nameKey(request.namespace, request.cluster), name);
    claimed.set(`${request.namespace}/${name}`, request.cluster);
  };
  const skip = (request: NameRequest, name: string, reason: Skipped['reason'], detail: string) =>
    choice.skipped.push({ namespace: request.namespace, name, reason, detail });

  // 1. Incumbents keep their names; a name that can only be the cluster's, held by a malformed object, blocks it.
  const newcomers: Array<{ request: NameRequest; candidates: string[] }> = [];
  const seen = new Set<string>();
  for (const request of input.requests) {
    const key = nameKey(request.namespace, request.cluster);
    if (seen.has(key)) continue; // the provider listed the cluster twice
    seen.add(key);
    const candidates = scheme.candidates(manager, request.cluster);
    const own = [...scheme.legacy(manager, request.cluster), ...candidates];
    const kept = own.find((name) => {
      const stored = held.get(`${request.namespace}/${name}`);
      return stored !== undefined && profileOf(stored, request.cluster, manager);
    });
    if (kept !== undefined) claim(request, kept);
    else newcomers.push({ request, candidates });
  }

  // 2. Newcomers, in the order of their ids: the first candidate nothing else holds.
  newcomers.sort(
    (a, b) =>
      compareOrdinal(canonicalProviderId(a.request.cluster), canonicalProviderId(b.request.cluster)) ||
      a.request.namespace.localeCompare(b.request.namespace),
  );
  for (const { request, candidates } of newcomers) {
    const { namespace, cluster } = request;
    let given: string | undefined;
    let blocked = false;
    const taken: string[] = [];
    /** The cluster left unwritten at `name`, held by `holder`, which it does not yield the name to. */
    const keptOut = (name: string, holder: ClusterProfile) => {
      const key = `${namespace}/${name}`;
      skip(
        request,
        name,
        'NameUnavailable',
        `${key} is ${holderOf(holder, manager)}, which that name was not made for: ${cluster.providerId} is not written under another name in ${namespace}; it is written there once ${key} is free`,
      );
      blocked = true;
    };
    for (const name of candidates) {
      const key = `${namespace}/${name}`;
      const incumbent = held.get(key);
      if (incumbent) {
        if (!yieldsTo(incumbent, name, manager, scheme, listed)) {
          keptOut(name, incumbent);
          break;
        }
        taken.push(`${key} is ${holderOf(incumbent, manager)}`);
        continue;
      }
      const rival = claimed.get(key);
      if (rival) {
        taken.push(`${key} is given in this run to ${rival.providerId}`);
        continue;
      }
      const elsewhere = run.get(key);
      if (elsewhere !== undefined && elsewhere !== canonicalProviderId(cluster)) {
        taken.push(`${key} is given in this run to ${elsewhere}`);
        continue;
      }
      if (broken.has(key)) {
        blocked = true;
        skip(request, name, 'Malformed', `${key} in the hub is malformed; left untouched`);
        break;
      }
      // Held for this cluster while the hub is asked (another scope of the run may ask meanwhile).
      run.set(key, canonicalProviderId(cluster));
      const release = () => run.get(key) === canonicalProviderId(cluster) && run.delete(key);
      let stored: ClusterProfile | undefined;
      try {
        stored = await input.hub.get({ namespace, name });
      } catch (error) {
        release();
        if (!(error instanceof MalformedObjectError)) throw error;
        choice.malformed.push({ namespace, name, reason: error.malformed });
        skip(
          request,
          name,
          'Malformed',
          `${key} in the hub is malformed (${error.malformed}); left untouched`,
        );
        blocked = true;
        break;
      }
      const problem = stored === undefined ? undefined : profileProblem(stored);
      if (problem) {
        release();
        choice.malformed.push({ namespace, name, reason: problem });
        skip(request, name, 'Malformed', `${key} in the hub is malformed (${problem}); left untouched`);
        blocked = true;
        break;
      }
      if (stored === undefined || profileOf(stored, cluster, manager)) {
        if (stored) choice.found.push(stored);
        given = name;
        break;
      }
      release();
      if (!yieldsTo(stored, name, manager, scheme, listed)) {
        keptOut(name, stored);
        break;
      }
      taken.push(`${key} is ${holderOf(stored, manager)}`);
    }
    if (blocked) continue;
    if (given === undefined) {
      skip(
        request,
        candidates[0]!,
        'NameUnavailable',
        `${cluster.providerId} has no name free in ${namespace}: ${taken.join('; ')}`,
      );
      continue;
    }
    claim(request, given);
    if (taken.length > 0)
      choice.collisions.push(
        `${taken.join('; ')}; ${cluster.providerId} is written as ${namespace}/${given}`,
      );
  }
  return choice;
}
