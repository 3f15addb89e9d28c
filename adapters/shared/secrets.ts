/**
 * Secrets cpsync reads — a file (mounted or local) or an AWS Secrets Manager secret — and how a
 * failure to read one is told without quoting it.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CpsyncError } from '../../core/domain/errors.ts';
import { awsProxyConfig } from './proxy.ts';

export type SecretRef = { file: string } | { secretArn: string };

/** A secret that cannot be used as it is (e.g. a Secrets Manager secret without a string value). */
class SecretError extends CpsyncError {}

/** Where a secret comes from, as errors name it (never what it holds). */
export function secretSource(ref: SecretRef): string {
  return 'file' in ref ? `file ${ref.file}` : `secret ${ref.secretArn}`;
}

/** The text of a secret: a file, or an AWS Secrets Manager secret. Never logged. */
export async function readSecret(ref: SecretRef, secrets?: SecretsManagerClient): Promise<string> {
  if ('file' in ref) return readFile(resolve(ref.file), 'utf8');
  const client = secrets ?? new SecretsManagerClient({ ...awsProxyConfig() });
  const answer = await client.send(new GetSecretValueCommand({ SecretId: ref.secretArn }));
  if (answer.SecretString === undefined) throw new SecretError(`secret ${ref.secretArn} has no string value`);
  return answer.SecretString;
}

/**
 * Why a credential-bearing document could not be read, without quoting it: parsers put the text
 * around the fault in their messages, and that text may be a key or a token.
 */
export function safeReason(error: unknown): string {
  // An AWS SDK error (Secrets Manager) names the call's failure, never the secret's value.
  if ((error as { $metadata?: unknown }).$metadata !== undefined)
    return `cannot be read: ${(error as Error).name}: ${(error as Error).message}`;
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'cannot be read (permission denied)';
  if (code === 'EISDIR') return 'is a directory, not a file';
  const name = error instanceof Error ? error.name : '';
  if (name === 'SyntaxError' || name === 'YAMLException' || /YAML|JSON/i.test(name))
    return 'is not valid YAML or JSON';
  return 'cannot be read';
}
