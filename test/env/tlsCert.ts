/**
 * A self-signed certificate for a local TLS server (localhost, or the names given, and 127.0.0.1), made with openssl, and
 * a way for this process's TLS clients to trust it without restarting Node.
 */
import { NEW_EC_KEY, openssl } from './openssl.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';

export interface LocalCertificate {
  cert: string;
  key: string;
}

/** `names`: the DNS names the certificate is for, beside 127.0.0.1. */
export function makeLocalCertificate(commonName = 'localhost', names = ['localhost']): LocalCertificate {
  const directory = mkdtempSync(join(tmpdir(), 'cpsync-tls-'));
  try {
    openssl(
      [
        'req',
        '-x509',
        ...NEW_EC_KEY,
        '-days',
        '2',
        '-subj',
        `/CN=${commonName}`,
        '-addext',
        `subjectAltName=${names.map((name) => `DNS:${name},`).join('')}IP:127.0.0.1`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-keyout',
        'key.pem',
        '-out',
        'cert.pem',
      ],
      directory,
    );
    return {
      cert: readFileSync(join(directory, 'cert.pem'), 'utf8'),
      key: readFileSync(join(directory, 'key.pem'), 'utf8'),
    };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

/** Adds `cert` to the CA certificates this process's TLS clients trust by default. */
export function trustCertificate(cert: string): void {
  setDefaultCACertificates([...getCACertificates('default'), cert]);
}
