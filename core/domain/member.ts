/**
 * The member probe's part of a profile (the `memberProbe` feature, KEP-2149 and KEP-4322's ClusterProperty
 * rule): what a reading of the member cluster adds to the profile the clouds gave, what is carried over
 * from the hub when the member is not read this run (paced, or unreachable), and when a member is due.
 * Pure: the adapter (adapters/member/) does the reading.
 */
import { createHash } from 'node:crypto';
import {
  ANNOTATION_PROVIDER_ID,
  CONDITION_MEMBER_REACHABLE,
  CONDITION_MESSAGE_MAX_LENGTH,
  PROPERTY_CLUSTERSET,
  PROPERTY_CLUSTERSET_CONFLICT,
  PROPERTY_CLUSTER_ID,
  PROPERTY_CLUSTER_ID_SOURCE,
  PROPERTY_CRD_GROUPS,
  PROPERTY_ENDPOINTS,
  PROPERTY_LOCATION,
  PROPERTY_MEMBER_PROPERTIES,
  PROPERTY_NAME_MAX_LENGTH,
  PROPERTY_NODE_COUNT,
  PROPERTY_NODE_TYPES,
  PROPERTY_REGION,
  PROPERTY_VALUE_MAX_LENGTH,
  PROPERTY_ZONE,
} from './constants.ts';
import type { ClusterProfile, Condition, Property } from './model/clusterProfile.ts';
import { distinctSorted, fitJsonArray, fitText } from './properties.ts';

/** What reading a member gave. */
export type MemberReading =
  | {
      reachable: true;
      /** The ClusterProperty objects labelled for ClusterProfiles, as the member holds them. */
      properties: Array<{ name: string; value: string }>;
      /** The `about.k8s.io` version read, when the member serves the group. */
      clusterPropertyVersion?: string;
      /** The UID of the member's `kube-system` namespace. */
      kubeSystemUid?: string;
      /** The groups of the member's CustomResourceDefinitions. */
      crdGroups: string[];
    }
  | {
      reachable: false;
      /** `Unauthorized`, `Forbidden`, `Timeout`, `Unreachable`, `NoAccessProvider`, `Failed`. */
      reason: string;
      message: string;
    };

/** The names the probe wrote outside `cpsync.io/` on a profile (its `cpsync.io/member-properties`). */
export function memberPropertyNames(properties: readonly Property[] | undefined): Set<string> {
  const list = properties?.find((p) => p.name === PROPERTY_MEMBER_PROPERTIES)?.value;
  if (list === undefined) return new Set();
  try {
    const names = JSON.parse(list) as unknown;
    return new Set(Array.isArray(names) ? names.filter((n): n is string => typeof n === 'string') : []);
  } catch {
    return new Set();
  }
}

/** Every property name the probe owns on a profile: the listed ones and its own `cpsync.io/` ones. */
function probeNames(properties: readonly Property[] | undefined): Set<string> {
  const names = memberPropertyNames(properties);
  for (const name of [PROPERTY_MEMBER_PROPERTIES, PROPERTY_CLUSTER_ID_SOURCE, PROPERTY_CLUSTERSET_CONFLICT])
    if (properties?.some((p) => p.name === name)) names.add(name);
  return names;
}

/** Whether the probe has read (or tried to read) the member of this profile before. */
export function probedBefore(profile: ClusterProfile | undefined): boolean {
  return (
    profile?.status?.conditions?.some((c) => c.type === CONDITION_MEMBER_REACHABLE) === true ||
    memberPropertyNames(profile?.status?.properties).size > 0
  );
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function withProperties(
  profile: ClusterProfile,
  replaced: ReadonlySet<string>,
  added: readonly Property[],
): Property[] {
  return [...(profile.status?.properties ?? []).filter((p) => !replaced.has(p.name)), ...added].sort(byName);
}

function withCondition(profile: ClusterProfile, condition: Condition | undefined): Condition[] {
  const others = (profile.status?.conditions ?? []).filter((c) => c.type !== CONDITION_MEMBER_REACHABLE);
  return condition ? [...others, condition] : others;
}

/**
 * The properties cpsync writes from the clouds' answers and the configuration. A member's ClusterProperty of one of
 * these names is not copied, whether or not the profile has it this time: whoever administers a member cluster is
 * no authority over where it is, how it is reached, its nodes, or which ClusterSet (and so which consumers' selectors)
 * it is in.
 */
const DERIVED_PROPERTIES: ReadonlySet<string> = new Set([
  PROPERTY_ENDPOINTS,
  PROPERTY_LOCATION,
  PROPERTY_REGION,
  PROPERTY_ZONE,
  PROPERTY_NODE_COUNT,
  PROPERTY_NODE_TYPES,
  PROPERTY_CLUSTERSET,
]);

/** Whether a member's property of this name would stand for one cpsync derives (`desired` has it, or it may). */
const derived = (name: string, desired: ClusterProfile) =>
  DERIVED_PROPERTIES.has(name) || (desired.status?.properties ?? []).some((p) => p.name === name);

const propertyOf = (profile: ClusterProfile | undefined, name: string) =>
  profile?.status?.properties?.find((p) => p.name === name);

/** How a disagreement between the configured ClusterSet and a member's says itself. */
const conflictText = (configured: string, member: string) => `configured ${configured}, member ${member}`;

/**
 * The member's ClusterSet as `previous` recorded it: its conflict property, read against the set it was configured
 * with (its `clusterset.k8s.io`, always the configured one).
 */
function recordedMemberSet(previous: ClusterProfile | undefined): string | undefined {
  const conflict = propertyOf(previous, PROPERTY_CLUSTERSET_CONFLICT)?.value;
  const configured = propertyOf(previous, PROPERTY_CLUSTERSET)?.value;
  if (conflict === undefined || configured === undefined) return undefined;
  const head = conflictText(configured, '');
  return conflict.startsWith(head) ? conflict.slice(head.length) : undefined;
}

/**
 * `desired` with the member state `previous` (the profile as the hub holds it) carries: what the probe
 * wrote there is kept as it is — the member is not read this run — save a property cpsync derives from the
 * clouds and the configuration, which is `desired`'s.
 */
export function carryMemberState(
  desired: ClusterProfile,
  previous: ClusterProfile | undefined,
  condition?: Condition,
): ClusterProfile {
  if (previous === undefined && condition === undefined) return desired;
  const names = probeNames(previous?.status?.properties);
  const kept = (previous?.status?.properties ?? [])
    .filter((p) => names.has(p.name) && p.name !== PROPERTY_CLUSTERSET_CONFLICT && !derived(p.name, desired))
    // The list of what the member gave says nothing of a name cpsync derives (an earlier version's reading).
    .flatMap((p) => {
      if (p.name !== PROPERTY_MEMBER_PROPERTIES) return [p];
      const listed = [...memberPropertyNames([p])].filter((name) => !derived(name, desired));
      if (listed.length === 0) return [];
      const value = JSON.stringify(listed.sort());
      return [value === p.value ? p : { ...p, value }];
    });
  // The disagreement is this profile's own (a projected copy's namespace may stand for another set).
  const configuredSet = propertyOf(desired, PROPERTY_CLUSTERSET)?.value;
  const memberSet = recordedMemberSet(previous);
  const conflict = propertyOf(previous, PROPERTY_CLUSTERSET_CONFLICT);
  if (configuredSet !== undefined && memberSet !== undefined && configuredSet !== memberSet) {
    const value = conflictText(configuredSet, memberSet);
    // The time: the hub's while the value holds (as the plan keeps it), else when the clouds were observed.
    const observed =
      conflict?.value === value
        ? conflict.lastObservedTime
        : desired.status?.properties?.[0]?.lastObservedTime;
    kept.push({
      name: PROPERTY_CLUSTERSET_CONFLICT,
      value,
      ...(observed ? { lastObservedTime: observed } : {}),
    });
  }
  names.add(PROPERTY_CLUSTERSET_CONFLICT);
  // A name the probe once wrote that cpsync now derives is desired's: not replaced by what the hub holds.
  for (const name of names) if (derived(name, desired)) names.delete(name);
  return {
    ...desired,
    status: {
      ...desired.status,
      properties: withProperties(desired, names, kept),
      conditions: withCondition(
        desired,
        condition ?? previous?.status?.conditions?.find((c) => c.type === CONDITION_MEMBER_REACHABLE),
      ),
    },
  };
}

/**
 * Whether a property can be copied unchanged: the ClusterProfile CRD's limits, not one of cpsync's own names, and
 * not one cpsync derives from the clouds and the configuration.
 */
function copyable(property: { name: string; value: string }, desired: ClusterProfile): string | undefined {
  if (property.name.startsWith('cpsync.io/')) return 'a cpsync.io/ name';
  if (derived(property.name, desired)) return "cpsync's, from the clouds and the configuration";
  if (property.name.length > PROPERTY_NAME_MAX_LENGTH) return 'name too long';
  // Characters as the API server counts them (code points).
  const length = Array.from(property.value).length;
  if (length === 0) return 'an empty value';
  if (length > PROPERTY_VALUE_MAX_LENGTH) return `value longer than ${PROPERTY_VALUE_MAX_LENGTH} characters`;
  return undefined;
}

/**
 * `desired` with what a reading of its member says (KEP-4322: the member's labelled ClusterProperties
 * are copied unchanged; KEP-2149: the member's own cluster id, else its `kube-system` UID, recorded as
 * such; the CRD groups it serves). A property cpsync derives from the clouds and the configuration is theirs: the
 * member's is not copied (a ClusterSet the member names differently is recorded in
 * `cpsync.io/clusterset-conflict`). An unreachable member changes nothing but the `MemberReachable` condition:
 * what was read before stays.
 */
export function applyMemberReading(
  desired: ClusterProfile,
  reading: MemberReading,
  previous: ClusterProfile | undefined,
  now: string,
): ClusterProfile {
  if (!reading.reachable)
    return carryMemberState(desired, previous, {
      type: CONDITION_MEMBER_REACHABLE,
      status: 'False',
      reason: reading.reason,
      message: fitText(reading.message, CONDITION_MESSAGE_MAX_LENGTH),
      lastTransitionTime: now,
    });
  const copied: Property[] = [];
  const refused: string[] = [];
  let memberSet: string | undefined;
  // The names copied are listed in `cpsync.io/member-properties` (what a later reading takes out): no more are copied
  // than one property value can name, the member's own cluster id first, then in name order. Room is kept for the
  // names the probe writes itself.
  const listed = [PROPERTY_CLUSTER_ID, PROPERTY_CRD_GROUPS];
  const inOrder = [...reading.properties].sort(
    (a, b) => Number(b.name === PROPERTY_CLUSTER_ID) - Number(a.name === PROPERTY_CLUSTER_ID) || byName(a, b),
  );
  for (const property of inOrder) {
    if (property.name === PROPERTY_CLUSTERSET) memberSet ??= property.value;
    const problem = copyable(property, desired);
    if (problem) refused.push(`${property.name} (${problem})`);
    else if (!copied.some((p) => p.name === property.name)) {
      if (!listed.includes(property.name)) {
        if (Array.from(JSON.stringify([...listed, property.name])).length > PROPERTY_VALUE_MAX_LENGTH) {
          refused.push(`${property.name} (more than ${PROPERTY_MEMBER_PROPERTIES} can name)`);
          continue;
        }
        listed.push(property.name);
      }
      copied.push({ name: property.name, value: property.value, lastObservedTime: now });
    }
  }
  const written = new Map(copied.map((p) => [p.name, p]));
  const add = (name: string, value: string) => {
    if (!written.has(name)) written.set(name, { name, value, lastObservedTime: now });
  };
  if (written.has(PROPERTY_CLUSTER_ID)) add(PROPERTY_CLUSTER_ID_SOURCE, 'ClusterProperty');
  else if (reading.kubeSystemUid) {
    add(PROPERTY_CLUSTER_ID, reading.kubeSystemUid);
    add(PROPERTY_CLUSTER_ID_SOURCE, 'kube-system-uid');
  }
  if (reading.crdGroups.length > 0)
    add(PROPERTY_CRD_GROUPS, fitJsonArray(distinctSorted(reading.crdGroups)).json);
  const configuredSet = propertyOf(desired, PROPERTY_CLUSTERSET)?.value;
  const conflict =
    configuredSet !== undefined && memberSet && configuredSet !== memberSet
      ? conflictText(configuredSet, memberSet)
      : undefined;
  // Code points, as the API server counts them; a longer one is named in the condition, as not copied.
  if (conflict !== undefined && Array.from(conflict).length <= PROPERTY_VALUE_MAX_LENGTH)
    add(PROPERTY_CLUSTERSET_CONFLICT, conflict);
  const foreign = [...written.keys()].filter((name) => !name.startsWith('cpsync.io/')).sort();
  if (foreign.length > 0) add(PROPERTY_MEMBER_PROPERTIES, JSON.stringify(foreign));

  const replaced = new Set([...probeNames(desired.status?.properties), ...written.keys()]);
  const version = reading.clusterPropertyVersion;
  const message = [
    version
      ? `read ${copied.length} ClusterPropert${copied.length === 1 ? 'y' : 'ies'} (about.k8s.io/${version})`
      : 'no ClusterProperty API served',
    written.get(PROPERTY_CLUSTER_ID_SOURCE)?.value === 'kube-system-uid'
      ? 'the id from kube-system'
      : undefined,
    `${distinctSorted(reading.crdGroups).length} CRD groups`,
    refused.length > 0 ? `not copied: ${refused.join(', ')}` : undefined,
  ]
    .filter((part) => part !== undefined)
    .join('; ');
  const said = fitText(message.charAt(0).toUpperCase() + message.slice(1), CONDITION_MESSAGE_MAX_LENGTH);
  return {
    ...desired,
    status: {
      ...desired.status,
      properties: withProperties(desired, replaced, [...written.values()]),
      conditions: withCondition(desired, {
        type: CONDITION_MEMBER_REACHABLE,
        status: 'True',
        reason: 'Read',
        message: said,
        lastTransitionTime: now,
      }),
    },
  };
}

/** How often each member is read, in slots: a run reads the members whose slot it falls in. */
export interface MemberPacing {
  /** Each member is read once in this time. */
  everyMillis: number;
  /** The length of a slot (the schedule's period): `everyMillis / slotMillis` slots in turn. */
  slotMillis: number;
}

/**
 * Whether a member is due for a reading in the run at `nowMillis`: the members are spread over the slots
 * of each period by a hash of their provider id, so a run reads about one slot's share of them and an
 * inventory of any size is read whole once per period — without keeping any state (no write records it).
 */
export function memberDue(providerId: string, nowMillis: number, pacing: MemberPacing): boolean {
  const slots = Math.max(1, Math.round(pacing.everyMillis / pacing.slotMillis));
  if (slots === 1) return true;
  const slot = Math.floor(nowMillis / pacing.slotMillis) % slots;
  const own = createHash('sha256').update(providerId).digest().readUInt32BE(0) % slots;
  return slot === own;
}

/** The provider id of a profile. */
export const providerIdOf = (profile: ClusterProfile) =>
  profile.metadata.annotations?.[ANNOTATION_PROVIDER_ID];
