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
    if (value.length > 63 || !LABEL_VALUE.test(value)) problems.push(`label ${key}=${value}`);
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
