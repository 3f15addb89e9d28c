/** The vendored CRD's openAPIV3Schema as a validator: what the apiserver checks, run in-process. */
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import type { ClusterProfile } from '../../core/domain/model/clusterProfile.ts';
import { isDns1123Label } from '../../core/domain/naming.ts';

const CRD = parse(
  readFileSync(
    new URL('../../adapters/hub/manifests/crd/multicluster.x-k8s.io_clusterprofiles.yaml', import.meta.url),
    'utf8',
  ),
) as {
  spec: { versions: Array<{ schema: { openAPIV3Schema: object } }> };
};
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const validate = ajv.compile(CRD.spec.versions[0]!.schema.openAPIV3Schema);
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Why the API server refuses `key` as a label key, or undefined when it takes it: apimachinery's
 * `validation.IsQualifiedName`, written from its documented rules (a name of 1-63 characters, optionally after a
 * DNS-1123 subdomain prefix of at most 253 and a `/`), not from the rule cpsync applies.
 */
export function labelKeyProblem(key: string): string | undefined {
  const parts = key.split('/');
  let name: string;
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) return 'prefix part must be non-empty';
    if (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))
      return 'prefix part must be a DNS-1123 subdomain of at most 253 characters';
  } else return 'a qualified name has at most one /';
  if (name.length === 0) return 'name part must be non-empty';
  if (name.length > 63) return 'name part must be no more than 63 characters';
  if (!QUALIFIED_NAME.test(name)) return 'name part must consist of alphanumeric characters, -, _ or .';
  return undefined;
}

/** Why the API server refuses `value` as a label value, or undefined when it takes it. */
export function labelValueProblem(value: string): string | undefined {
  return value.length > 63 || !LABEL_VALUE.test(value) ? 'not a label value' : undefined;
}

/**
 * Whether the apiserver's `format: byte` check — Go's `base64.StdEncoding.DecodeString` — takes `text`:
 * WHATWG forgiving base64 (`atob`), with the padding Go requires and only the line breaks Go skips.
 * Written from Go's documented behaviour, not from the rule cpsync applies.
 */
function goStdBase64Decodes(text: string): boolean {
  const data = text.replace(/[\r\n]/g, '');
  if (data.length % 4 !== 0 || /[\t\f ]/.test(data)) return false;
  try {
    atob(data);
    return true;
  } catch {
    return false;
  }
}

/** Everything a real apiserver with the CRD would refuse in `profile` (empty when it would accept it). */
export function crdViolations(profile: ClusterProfile): string[] {
  const problems: string[] = [];
  if (!validate(profile))
    problems.push(...(validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`));
  if (!isDns1123Label(profile.metadata.name))
    problems.push(`metadata.name ${profile.metadata.name} is not a DNS-1123 label`);
  if (!isDns1123Label(profile.metadata.namespace))
    problems.push(`metadata.namespace ${profile.metadata.namespace}`);
  for (const [key, value] of Object.entries(profile.metadata.labels ?? {})) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) problems.push(`label key ${key}: ${keyProblem}`);
    if (labelValueProblem(value)) problems.push(`label ${key}=${value}`);
  }
  for (const p of profile.status?.properties ?? [])
    if (p.value.length < 1 || p.value.length > 1024)
      problems.push(`property ${p.name} length ${p.value.length}`);
  for (const a of profile.status?.accessProviders ?? []) {
    if (!a.cluster?.server) problems.push(`accessProvider ${a.name} without server`);
    const ca = a.cluster?.['certificate-authority-data'];
    if (ca !== undefined && !goStdBase64Decodes(ca))
      problems.push(`accessProvider ${a.name} certificate-authority-data is not base64`);
  }
  return problems;
}
