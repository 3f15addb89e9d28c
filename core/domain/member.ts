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
  PROPERTY_MEMBER_PROPERTIES,
  PROPERTY_NAME_MAX_LENGTH,
  PROPERTY_VALUE_MAX_LENGTH,
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
 * `desired` with the member state `previous` (the profile as the hub holds it) carries: what the probe
 * wrote there is kept as it is — the member is not read this run.
 */
export function carryMemberState(
  desired: ClusterProfile,
  previous: ClusterProfile | undefined,
  condition?: Condition,
): ClusterProfile {
  if (previous === undefined && condition === undefined) return desired;
  const names = probeNames(previous?.status?.properties);
  const kept = (previous?.status?.properties ?? []).filter(
    (p) => names.has(p.name) && p.name !== PROPERTY_CLUSTERSET_CONFLICT,
  );
  // The disagreement is this profile's own (a projected copy's namespace may stand for another set).
  const configuredSet = desired.status?.properties?.find((p) => p.name === PROPERTY_CLUSTERSET)?.value;
  const memberSet = memberPropertyNames(previous?.status?.properties).has(PROPERTY_CLUSTERSET)
    ? kept.find((p) => p.name === PROPERTY_CLUSTERSET)?.value
    : undefined;
  const conflict = previous?.status?.properties?.find((p) => p.name === PROPERTY_CLUSTERSET_CONFLICT);
  if (configuredSet !== undefined && memberSet !== undefined && configuredSet !== memberSet) {
    const value = `configured ${configuredSet}, member ${memberSet}`;
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

/** Whether a property can be copied unchanged: the ClusterProfile CRD's limits, and not one of cpsync's own names. */
function copyable(property: { name: string; value: string }): string | undefined {
  if (property.name.startsWith('cpsync.io/')) return 'a cpsync.io/ name';
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
 * such; the CRD groups it serves). A member's value wins over the one cpsync made (a ClusterSet the
 * configuration names differently is recorded in `cpsync.io/clusterset-conflict`). An unreachable member
 * changes nothing but the `MemberReachable` condition: what was read before stays.
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
  for (const property of [...reading.properties].sort(byName)) {
    const problem = copyable(property);
    if (problem) refused.push(`${property.name} (${problem})`);
    else if (!copied.some((p) => p.name === property.name))
      copied.push({ name: property.name, value: property.value, lastObservedTime: now });
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
  const configuredSet = desired.status?.properties?.find((p) => p.name === PROPERTY_CLUSTERSET)?.value;
  const memberSet = written.get(PROPERTY_CLUSTERSET)?.value;
  if (configuredSet !== undefined && memberSet !== undefined && configuredSet !== memberSet)
    add(PROPERTY_CLUSTERSET_CONFLICT, `configured ${configuredSet}, member ${memberSet}`);
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
  return {
    ...desired,
    status: {
      ...desired.status,
      properties: withProperties(desired, replaced, [...written.values()]),
      conditions: withCondition(desired, {
        type: CONDITION_MEMBER_REACHABLE,
        status: 'True',
        reason: 'Read',
        message: message.charAt(0).toUpperCase() + message.slice(1),
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
