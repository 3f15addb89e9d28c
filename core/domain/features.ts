/**
 * cpsync's optional features, after KEP-3920 (feature states with a clean turn-off): each has a name,
 * a maturity and a default, is set in the configuration's one `features:` map, reports its use on every
 * run, and — turned off — has what it wrote removed from every profile at the next listing of its scope,
 * reading `turning-off` until nothing it wrote is left and `off` after.
 *
 * A feature is registered here with `carries`, which says whether a profile on the hub still holds
 * something it wrote; the on → use → off test (test/e2e/features.test.ts) runs for every registered
 * feature, so a new one is covered by registering it (and naming how to use it there).
 */
import {
  ANNOTATION_TAG_LABELS,
  LABEL_CLUSTER,
  PROPERTY_CLUSTERSET,
  PROPERTY_ENDPOINT_PREFERENCE,
  PROPERTY_TAG_LABELS_OMITTED,
  PROPERTY_TAG_PREFIX,
} from './constants.ts';
import type { ClusterProfile } from './model/clusterProfile.ts';
import { probedBefore } from './member.ts';
import { carriesGrants } from './grants.ts';

export type Maturity = 'alpha' | 'beta' | 'GA';

export const FEATURE_NAMES = [
  'tagProperties',
  'tagLabels',
  'privateEndpoints',
  'clusterSets',
  'certificateAuthority',
  'projections',
  'memberProbe',
  'accessGrants',
] as const;
export type FeatureName = (typeof FEATURE_NAMES)[number];

/** Whether each feature is on. */
export type FeatureGates = Readonly<Record<FeatureName, boolean>>;

export interface Feature {
  name: FeatureName;
  maturity: Maturity;
  default: boolean;
  /** What it writes while on. */
  writes: string;
  /** What turning it off removes. */
  removes: string;
  /** Whether `profile` (as the hub holds it) carries something the feature wrote. */
  carries(profile: ClusterProfile, accessProviderNames: readonly string[]): boolean;
}

const hasProperty = (profile: ClusterProfile, test: (name: string) => boolean) =>
  (profile.status?.properties ?? []).some((p) => test(p.name));

export const FEATURES: readonly Feature[] = [
  {
    name: 'tagProperties',
    maturity: 'beta',
    default: true,
    writes: '`cpsync.io/tag.<key>` properties for the tags `inventory.tagAllowList` names',
    removes: 'every `cpsync.io/tag.` property',
    carries: (profile) => hasProperty(profile, (name) => name.startsWith(PROPERTY_TAG_PREFIX)),
  },
  {
    name: 'tagLabels',
    maturity: 'beta',
    default: true,
    writes:
      'a label `<prefix><tag key>` for each tag `inventory.labels.fromTags` names whose label key and value are valid label syntax, recorded in `cpsync.io/labels-from-tags`; `cpsync.io/tag-labels-omitted` counts the others',
    removes: 'every label it copied from a tag, the record and the count',
    carries: (profile) =>
      profile.metadata.annotations?.[ANNOTATION_TAG_LABELS] !== undefined ||
      hasProperty(profile, (name) => name === PROPERTY_TAG_LABELS_OMITTED),
  },
  {
    name: 'privateEndpoints',
    maturity: 'beta',
    default: false,
    writes:
      'private endpoints first in `cluster-endpoints.k8s.io` and as the access provider server, marked by `cpsync.io/endpoint-preference: private`',
    removes: 'the preference: public endpoints first again, the marker property gone',
    carries: (profile) => hasProperty(profile, (name) => name === PROPERTY_ENDPOINT_PREFERENCE),
  },
  {
    name: 'clusterSets',
    maturity: 'beta',
    default: true,
    writes:
      'the ClusterSet labels on the namespaces `inventory.clusterSets` names and the `clusterset.k8s.io` property on their profiles',
    removes: 'the `clusterset.k8s.io` property and cpsync’s ClusterSet labels on those namespaces',
    carries: (profile) => hasProperty(profile, (name) => name === PROPERTY_CLUSTERSET),
  },
  {
    name: 'certificateAuthority',
    maturity: 'beta',
    default: true,
    writes:
      'each cluster’s CA as `certificate-authority-data` of its access provider (AKS: read with listClusterUserCredential)',
    removes: 'every `certificate-authority-data` cpsync wrote (the profile then says `NotRead`)',
    carries: (profile, names) =>
      (profile.status?.accessProviders ?? []).some(
        (a) => names.includes(a.name) && a.cluster?.['certificate-authority-data'] !== undefined,
      ),
  },
  {
    name: 'projections',
    maturity: 'beta',
    default: true,
    writes:
      'a copy of the profile of each cluster `inventory.projections` matches in every namespace the rule names, and the `cpsync.io/cluster` label on the cluster’s profiles',
    removes: 'every projected copy (with Deleted events) and the `cpsync.io/cluster` label',
    carries: (profile) => profile.metadata.labels?.[LABEL_CLUSTER] !== undefined,
  },
  {
    name: 'memberProbe',
    maturity: 'alpha',
    default: false,
    writes:
      'what each member cluster says of itself: its labelled ClusterProperties (copied unchanged), `cluster.clusterset.k8s.io` (else the kube-system UID), `group.customResource.k8s.io`, the `MemberReachable` condition',
    removes:
      'every property the probe wrote (`cpsync.io/member-properties` names them) and the `MemberReachable` condition',
    carries: (profile) => probedBefore(profile),
  },
  {
    name: 'accessGrants',
    maturity: 'alpha',
    default: false,
    writes:
      'access for each consumer `consumers:` binds to the namespace on its clusters (EKS access entries, RBAC bindings on GKE and AKS members), recorded in `cpsync.io/access-grants`, and a `consumers.cpsync.io/<name>` condition per consumer',
    removes:
      'every grant cpsync made (the access entries and bindings it marked as its own), the record and the consumers’ conditions',
    carries: (profile) => carriesGrants(profile),
  },
];

export const DEFAULT_FEATURE_GATES: FeatureGates = Object.fromEntries(
  FEATURES.map((f) => [f.name, f.default]),
) as Record<FeatureName, boolean>;

/** A feature's state: `turning-off` while profiles still carry what it wrote. */
export type FeatureState = 'on' | 'off' | 'turning-off';

export interface FeatureUse {
  desired: 'on' | 'off';
  actual: FeatureState;
  /** Profiles that carry what the feature wrote (while it is off: what is left to remove). */
  profiles: number;
}

export type FeatureReport = Record<FeatureName, FeatureUse>;

/** How many of `profiles` carry what each feature wrote. */
export function featureCounts(
  profiles: Iterable<ClusterProfile>,
  accessProviderNames: readonly string[],
): Record<FeatureName, number> {
  const counts = Object.fromEntries(FEATURE_NAMES.map((name) => [name, 0])) as Record<FeatureName, number>;
  for (const profile of profiles)
    for (const feature of FEATURES)
      if (feature.carries(profile, accessProviderNames)) counts[feature.name] += 1;
  return counts;
}

/** Each feature's state given the gates and the counts of profiles carrying its writes. */
export function featureReport(
  gates: FeatureGates,
  counts: Readonly<Record<FeatureName, number>>,
): FeatureReport {
  return Object.fromEntries(
    FEATURES.map((f): [FeatureName, FeatureUse] => {
      const profiles = counts[f.name];
      const on = gates[f.name];
      return [
        f.name,
        { desired: on ? 'on' : 'off', actual: on ? 'on' : profiles > 0 ? 'turning-off' : 'off', profiles },
      ];
    }),
  ) as FeatureReport;
}

/** Adds counts (of several scopes) together. */
export function addCounts(
  into: Record<FeatureName, number>,
  more: Readonly<Partial<Record<FeatureName, number>>>,
): Record<FeatureName, number> {
  for (const name of FEATURE_NAMES) into[name] += more[name] ?? 0;
  return into;
}

export const noCounts = (): Record<FeatureName, number> =>
  Object.fromEntries(FEATURE_NAMES.map((name) => [name, 0])) as Record<FeatureName, number>;

/** One line per feature: `name state`, with what is left while turning off. */
export function describeFeatures(report: FeatureReport): string[] {
  return FEATURES.map(({ name }) => {
    const use = report[name];
    return use.actual === 'turning-off'
      ? `${name} turning-off (${use.profiles === 1 ? '1 profile still carries' : `${use.profiles} profiles still carry`} what it wrote)`
      : `${name} ${use.actual}`;
  });
}

/** The key of a scope in the feature-state ConfigMap (`[-._a-zA-Z0-9]+`). */
export function featureScopeKey(scope: { provider: string; account: string; region: string }): string {
  return `scope.${scope.provider}.${scope.account}.${scope.region === '*' ? 'all' : scope.region}`;
}

/** The ConfigMap of each inventory namespace that holds the feature states. */
export function featureConfigMapName(manager: string): string {
  return `${manager}-features`;
}

/** The key of the summary in the feature-state ConfigMap. */
export const FEATURE_SUMMARY_KEY = 'features.json';

/**
 * The feature-state ConfigMap's data after one scope's sync: the scope's key holds what is left of the
 * features that are off (absent once nothing is), and the summary every feature's maturity, default,
 * desired and actual state over all scopes recorded. The same input gives the same data, so an
 * unchanged state is never written again.
 */
export function nextFeatureData(
  data: Readonly<Record<string, string>>,
  scopeKey: string,
  counts: Readonly<Record<FeatureName, number>>,
  gates: FeatureGates,
): Record<string, string> {
  const next: Record<string, string> = {};
  for (const [key, value] of Object.entries(data)) if (key.startsWith('scope.')) next[key] = value;
  const left = Object.fromEntries(
    FEATURES.filter((f) => !gates[f.name] && counts[f.name] > 0).map((f) => [f.name, counts[f.name]]),
  );
  if (Object.keys(left).length > 0) next[scopeKey] = JSON.stringify(left);
  else delete next[scopeKey];
  const totals = noCounts();
  for (const [key, value] of Object.entries(next))
    if (key.startsWith('scope.')) {
      try {
        const parsed = JSON.parse(value) as Partial<Record<FeatureName, number>>;
        // What a scope recorded for a feature now on is no longer left to remove.
        addCounts(
          totals,
          Object.fromEntries(
            FEATURES.filter((f) => !gates[f.name]).map((f) => [f.name, Number(parsed[f.name]) || 0]),
          ),
        );
      } catch {
        delete next[key];
      }
    }
  const report = featureReport(gates, totals);
  next[FEATURE_SUMMARY_KEY] = JSON.stringify(
    Object.fromEntries(
      FEATURES.map((f) => [
        f.name,
        {
          maturity: f.maturity,
          default: f.default ? 'on' : 'off',
          desired: report[f.name].desired,
          actual: report[f.name].actual,
          ...(gates[f.name] ? {} : { profilesLeft: report[f.name].profiles }),
        },
      ]),
    ),
    null,
    2,
  );
  return next;
}
