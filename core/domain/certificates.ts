import { createHash, X509Certificate } from 'node:crypto';

/** Why CA data cannot go into a profile: what client-go would fail on ("unable to parse bytes as PEM block"). */
export type CertificateAuthorityProblem = 'NotBase64' | 'NotPEMCertificates' | 'InvalidCertificate';

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([A-Za-z0-9+/=\r\n]+?)-----END \1-----/g;

/**
 * Standard, padded base64 — what the CRD's `format: byte` accepts — of one or more PEM `CERTIFICATE`
 * blocks that each parse as an X.509 certificate. Returns what is wrong, or undefined when every
 * client-go consumer can build its TLS configuration from the data.
 */
export function certificateAuthorityProblem(data: string): CertificateAuthorityProblem | undefined {
  // A cluster's CA changes rarely: each sync would otherwise parse every certificate again.
  const key = createHash('sha256').update(data).digest('base64');
  if (checked.has(key)) return checked.get(key);
  const problem = check(data);
  if (checked.size >= CHECKED_LIMIT) checked.delete(checked.keys().next().value!);
  checked.set(key, problem);
  return problem;
}

/** What was found for the CA data seen lately, by its digest (the oldest forgotten first). */
const checked = new Map<string, CertificateAuthorityProblem | undefined>();
const CHECKED_LIMIT = 50_000;

function check(data: string): CertificateAuthorityProblem | undefined {
  if (data.length === 0 || data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return 'NotBase64';
  const text = Buffer.from(data, 'base64').toString('utf8');
  const certificates = [...text.matchAll(PEM_BLOCK)].filter((block) => block[1] === 'CERTIFICATE');
  if (certificates.length === 0) return 'NotPEMCertificates';
  for (const block of certificates) {
    try {
      new X509Certificate(block[0]);
    } catch {
      return 'InvalidCertificate';
    }
  }
  return undefined;
}
