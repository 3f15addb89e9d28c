/**
 * The rules `multicluster.x-k8s.io/v1alpha2` puts on a ClusterProfile, transcribed from the upstream API's
 * kubebuilder markers (kubernetes-sigs/cluster-inventory-api, apis/v1alpha2/clusterprofile_types.go): what
 * an apiserver serving v1alpha2 refuses. Written from those markers, not from the rules cpsync applies.
 */
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';

/** `format.labelValue()`: empty, or 1–63 characters, alphanumeric at both ends, `-_.` inside. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const characters = (text: string) => Array.from(text).length;

/** CEL's `isURL(self) && url(self).getHost() != ''`: an absolute URL with a host. */
function absoluteWithHost(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.hostname !== '' ? url : undefined;
  } catch {
    return undefined;
  }
}

/** Each list's map key once (`+listType=map`). */
function duplicates(values: readonly string[]): string[] {
  return [...new Set(values.filter((value, i) => values.indexOf(value) !== i))];
}

/** Everything v1alpha2 would refuse in `profile` (empty when it would accept it). */
export function v1alpha2Violations(profile: ClusterProfile): string[] {
  const problems: string[] = [];
  const manager = profile.spec?.clusterManager?.name ?? '';
  if (characters(manager) < 1 || characters(manager) > 63 || !LABEL_VALUE.test(manager))
    problems.push(
      `spec.clusterManager.name ${JSON.stringify(manager)}: must be a label value of 1-63 characters`,
    );
  const status = profile.status ?? {};
  const conditionTypes = (status.conditions ?? []).map((c) => c.type);
  for (const type of duplicates(conditionTypes)) problems.push(`status.conditions: type ${type} twice`);
  const properties = status.properties ?? [];
  for (const name of duplicates(properties.map((p) => p.name)))
    problems.push(`status.properties: ${name} twice`);
  for (const [i, property] of properties.entries()) {
    if (characters(property.name) < 1 || characters(property.name) > 253)
      problems.push(`status.properties[${i}].name: 1-253 characters`);
    if (characters(property.value) < 1 || characters(property.value) > 1024)
      problems.push(`status.properties[${i}].value: 1-1024 characters`);
  }
  const providers = status.accessProviders ?? [];
  if (providers.length > 64) problems.push(`status.accessProviders: ${providers.length} > 64`);
  for (const name of duplicates(providers.map((p) => p.name)))
    problems.push(`status.accessProviders: ${name} twice`);
  for (const [i, provider] of providers.entries()) {
    const at = `status.accessProviders[${i}]`;
    if (characters(provider.name) < 1 || characters(provider.name) > 253)
      problems.push(`${at}.name: 1-253 characters`);
    const cluster = provider.cluster as
      | (NonNullable<typeof provider.cluster> & { 'proxy-url'?: string; 'tls-server-name'?: string })
      | undefined;
    if (!cluster) {
      problems.push(`${at}.cluster: required`);
      continue;
    }
    const server = cluster.server ?? '';
    if (characters(server) > 2048 || !absoluteWithHost(server))
      problems.push(
        `${at}.cluster.server ${JSON.stringify(server)}: an absolute URL with a host, at most 2048`,
      );
    if (cluster['tls-server-name'] !== undefined && characters(cluster['tls-server-name']) > 253)
      problems.push(`${at}.cluster.tls-server-name: at most 253 characters`);
    const proxy = cluster['proxy-url'];
    if (proxy !== undefined && proxy !== '') {
      const url = absoluteWithHost(proxy);
      if (characters(proxy) > 2048 || !url || !['http:', 'https:', 'socks5:'].includes(url.protocol))
        problems.push(`${at}.cluster.proxy-url ${JSON.stringify(proxy)}: http, https or socks5 with a host`);
    }
    const extensions = cluster.extensions ?? [];
    for (const name of duplicates(extensions.map((e) => e.name)))
      problems.push(`${at}.cluster.extensions: ${name} twice`);
    for (const [j, extension] of extensions.entries())
      if (characters(extension.name) < 1 || characters(extension.name) > 253)
        problems.push(`${at}.cluster.extensions[${j}].name: 1-253 characters`);
  }
  if ((status as { credentialProviders?: unknown }).credentialProviders !== undefined)
    problems.push('status.credentialProviders: not a field of v1alpha2');
  return problems;
}
