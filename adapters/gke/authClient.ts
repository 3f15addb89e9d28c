import { readFile } from 'node:fs/promises';
import {
  AwsClient,
  GoogleAuth,
  IdentityPoolClient,
  JWT,
  PluggableAuthClient,
  type AuthClient,
} from 'google-auth-library';
import { CpsyncError, InvalidOptionError } from '../../core/domain/errors.ts';
import { safeReason } from '../shared/secrets.ts';

/**
 * OAuth scopes of every Google token cpsync asks for: every Google API, and the identity's email, without which GKE
 * names a service account by its numeric unique id rather than the email its RBAC bindings name (as
 * gke-gcloud-auth-plugin asks for both).
 */
export const SCOPES = [
  'https://www.googleapis.com/auth/cloud-platform',
  'https://www.googleapis.com/auth/userinfo.email',
];

/** The auth client of a credential configuration: a service-account key or an external account (WIF). */
export function authClientFor(credentials: Record<string, unknown>): AuthClient {
  if (credentials.type === 'service_account') {
    const {
      client_email: email,
      private_key: key,
      private_key_id: keyId,
    } = credentials as Record<string, string>;
    if (!email || !key)
      throw new InvalidOptionError(
        'gke.credentials',
        'a service_account key needs client_email and private_key',
      );
    return new JWT({ email, key, ...(keyId ? { keyId } : {}), scopes: SCOPES });
  }
  if (credentials.type === 'external_account') {
    // What ExternalAccountClient.fromJSON picks, without its warning about untrusted configurations: this
    // one is the operator's own.
    const options = { ...credentials, scopes: SCOPES } as ConstructorParameters<typeof IdentityPoolClient>[0];
    const source = (credentials.credential_source ?? {}) as Record<string, unknown>;
    try {
      if (source.environment_id) return new AwsClient(options as ConstructorParameters<typeof AwsClient>[0]);
      if (source.executable)
        return new PluggableAuthClient(options as ConstructorParameters<typeof PluggableAuthClient>[0]);
      return new IdentityPoolClient(options);
    } catch (error) {
      // The library names the field that is wrong; the configuration holds no secret of its own.
      throw new InvalidOptionError(
        'gke.credentials',
        `is not a valid external_account configuration: ${(error as Error).message}`,
      );
    }
  }
  // The value is not quoted: whatever the file holds may be key material.
  throw new InvalidOptionError('gke.credentials', 'type must be service_account or external_account');
}

/**
 * The auth client of a credentials file — a service account's key or an external_account configuration
 * (workload identity federation), read as it is — or else Application Default Credentials (the metadata
 * server, gcloud's login, or a file of another type). `keyFile` is the file when it was read as a key.
 */
export async function googleAuthClient(
  file: string | undefined,
): Promise<{ client: AuthClient; keyFile?: string }> {
  if (file) {
    let json: Record<string, unknown>;
    try {
      json = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    } catch (error) {
      throw new CpsyncError(`cannot read the credentials file ${file}: ${safeReason(error)}`);
    }
    if (json.type === 'service_account' || json.type === 'external_account')
      return { client: authClientFor(json), keyFile: file };
  }
  return { client: await new GoogleAuth({ scopes: SCOPES, ...(file ? { keyFile: file } : {}) }).getClient() };
}
