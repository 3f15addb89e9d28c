/**
 * Labels from cloud tags (the `tagLabels` feature): each tag `inventory.labels.fromTags` names becomes the label
 * `<prefix><tag key>` with the tag's value, so that label selectors (an Argo CD ApplicationSet's cluster generator)
 * can choose clusters by them. Nothing is rewritten to fit: a tag whose label key (prefix included) is not a valid
 * label key, or is a key Kubernetes or cpsync keeps for its own, and a tag whose value is not a valid label value
 * (longer than 63 characters, a character outside `[A-Za-z0-9._-]`, not alphanumeric at both ends) are left out
 * and counted, since any other value would be a guess. Pure.
 */
import { OWNED_LABELS } from './constants.ts';
import { isLabelKey, isLabelValue } from './labels.ts';

/** What the configuration says of labels from tags (`inventory.labels`). */
export interface TagLabelOptions {
  /** Tag keys copied to labels; a trailing `*` matches a prefix. */
  fromTags: readonly string[];
  /** Put before each tag key to make its label key (`""`: the tag key is the label key). */
  prefix: string;
}

/** Whether `allowList` names the tag `key`: as it is, or by a `prefix*` pattern. */
export function allowListed(allowList: readonly string[], key: string): boolean {
  return allowList.some((entry) =>
    entry.endsWith('*') ? key.startsWith(entry.slice(0, -1)) : entry === key,
  );
}

/** Where tag labels may go inside cpsync's own domain. */
const CPSYNC_TAG_SPACE = 'cpsync.io/tag-';

const within = (domain: string, parent: string) => domain === parent || domain.endsWith(`.${parent}`);

/**
 * Why `key` cannot be a label copied from a tag, or undefined when it can: not a valid label key, one of
 * cpsync's own labels (OWNED_LABELS), in the `kubernetes.io` or `k8s.io` domains (Kubernetes keeps them for its
 * own labels), or under `cpsync.io/` elsewhere than `cpsync.io/tag-`.
 */
export function refusedTagLabelKey(key: string): string | undefined {
  if (!isLabelKey(key))
    return 'is not a valid label key ([<DNS subdomain>/]<name>, the name 1-63 characters of A-Z a-z 0-9 - _ ., alphanumeric at both ends)';
  if ((OWNED_LABELS as readonly string[]).includes(key)) return "is one of cpsync's own labels";
  const slash = key.indexOf('/');
  const domain = slash < 0 ? undefined : key.slice(0, slash);
  if (domain !== undefined && (within(domain, 'kubernetes.io') || within(domain, 'k8s.io')))
    return 'is in a domain Kubernetes keeps for its own labels (kubernetes.io, k8s.io)';
  if (domain !== undefined && within(domain, 'cpsync.io') && !key.startsWith(CPSYNC_TAG_SPACE))
    return `is in cpsync's own domain (tag labels go under ${CPSYNC_TAG_SPACE} there)`;
  return undefined;
}

/** Why `prefix` cannot start the labels copied from tags, or undefined when it can (`""` can). */
export function refusedTagLabelPrefix(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  const why = refusedTagLabelKey(`${prefix}x`);
  return why === undefined ? undefined : `a label ${prefix}<tag key> ${why}`;
}

/**
 * Why the allow-list entry `entry` cannot be used with `prefix`, or undefined when it can: a tag key whose label
 * would be refused (refusedTagLabelKey), or a `prefix*` pattern that could match a tag whose label would be one
 * of cpsync's own, or none of whose tags could be a label.
 */
export function refusedAllowListEntry(entry: string, prefix: string): string | undefined {
  if (!entry.endsWith('*')) {
    const key = `${prefix}${entry}`;
    const why = refusedTagLabelKey(key);
    return why === undefined ? undefined : `the tag ${entry} would be the label ${key}, which ${why}`;
  }
  const stem = `${prefix}${entry.slice(0, -1)}`;
  const clash = OWNED_LABELS.find((label) => label.startsWith(stem));
  if (clash !== undefined)
    return `${entry} could match a tag whose label would be ${clash}, one of cpsync's own labels`;
  const why = refusedTagLabelKey(`${stem}x`);
  if (why !== undefined && refusedTagLabelKey(`${stem}/x`) !== undefined)
    return `no tag ${entry} matches can be a label: ${stem}<rest> ${why}`;
  return undefined;
}

/** The labels of a cluster's tags, and how many of the tags named could not be labels. */
export interface TagLabels {
  /** Label key → value, sorted by key. */
  labels: Record<string, string>;
  /** Tags the allow-list names whose label key or value is refused. */
  omitted: number;
}

/** The labels `tags` make under `options` (see the file's comment for what is left out). */
export function tagLabels(tags: Readonly<Record<string, string>>, options: TagLabelOptions): TagLabels {
  const made: Array<[string, string]> = [];
  let omitted = 0;
  for (const [tag, value] of Object.entries(tags)) {
    if (!allowListed(options.fromTags, tag)) continue;
    const key = `${options.prefix}${tag}`;
    if (typeof value === 'string' && refusedTagLabelKey(key) === undefined && isLabelValue(value))
      made.push([key, value]);
    else omitted += 1;
  }
  made.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { labels: Object.fromEntries(made), omitted };
}

/** The label keys a profile's `cpsync.io/labels-from-tags` annotation names (none when it is absent or empty). */
export function recordedTagLabels(annotation: string | undefined): string[] {
  return annotation ? annotation.split(',').filter((key) => key !== '') : [];
}

/** The annotation value that records `keys` (sorted, comma-separated: label keys hold no comma). */
export function tagLabelRecord(keys: Iterable<string>): string {
  return [...keys].sort().join(',');
}
