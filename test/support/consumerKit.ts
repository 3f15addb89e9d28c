/**
 * What a consumer of the inventory carries, made for the local estate: `cpsync credentials` bundled as the
 * one file consumers run, an access-providers file mapping each cloud's access provider to it, and the
 * environment its default credential chains find (the local clouds' credentials; GKE through workload
 * identity federation at the local Google STS; no metadata probe).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { localGoogleFederation, type Emulators } from '../env/emulators.ts';
import { HUB_CREDENTIALS } from './aws.ts';
import { runCli } from './cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ConsumerKit {
  /** The bundled plugin. */
  plugin: string;
  /** The access-providers file: each cloud's provider runs the plugin. */
  providerFile: string;
  env: Record<string, string>;
  /** Writes another access-providers file mapping each cloud's access provider to `command args`. */
  providersFile(
    name: string,
    command: string,
    args: string[],
    env?: Array<{ name: string; value: string }>,
  ): string;
}

/** A consumer's own identity in each local cloud (else the estate's, which cpsync uses too). */
export interface ConsumerIdentity {
  aws?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  google?: { email: string };
  azure?: { clientId: string; clientSecret: string };
}

/**
 * A consumer with identities of its own in the local clouds: the IAM role `roleArn` assumed at the local STS,
 * the Google service account `email` (through workload identity federation), the Entra application `objectId`.
 * Returns them for `consumerKit`, and the assumed role's secret key by its access key id (for a member's
 * EKS token check, which verifies the signature as STS does).
 */
export async function consumerIdentity(
  emulators: Emulators,
  ids: { roleArn: string; email: string; objectId: string },
): Promise<{ as: ConsumerIdentity; secrets: Map<string, string> }> {
  const sts = new STSClient({
    endpoint: emulators.moto.endpoint,
    region: 'us-east-1',
    credentials: HUB_CREDENTIALS,
  });
  const assumed = (
    await sts.send(new AssumeRoleCommand({ RoleArn: ids.roleArn, RoleSessionName: 'consumer' }))
  ).Credentials!;
  const clientSecret = `secret-of-${ids.objectId}`;
  emulators.arm.clients.set(ids.objectId, clientSecret);
  return {
    as: {
      aws: {
        accessKeyId: assumed.AccessKeyId!,
        secretAccessKey: assumed.SecretAccessKey!,
        sessionToken: assumed.SessionToken!,
      },
      google: { email: ids.email },
      azure: { clientId: ids.objectId, clientSecret },
    },
    secrets: new Map([[assumed.AccessKeyId!, assumed.SecretAccessKey!]]),
  };
}

export function consumerKit(emulators: Emulators, as: ConsumerIdentity = {}): ConsumerKit {
  const plugin = join(emulators.directory, 'cpsync-credentials.mjs');
  const built = spawnSync(process.execPath, [join(ROOT, 'infra/build-credentials.ts'), plugin], {
    encoding: 'utf8',
  });
  if (built.status !== 0) throw new Error(`the credential plugin did not build: ${built.stderr}`);
  const providersFile: ConsumerKit['providersFile'] = (name, command, args, env = []) => {
    const path = join(emulators.directory, `${name}.json`);
    writeFileSync(
      path,
      JSON.stringify({
        providers: ['eks', 'gke', 'aks'].map((provider) => ({
          name: provider,
          execConfig: {
            apiVersion: 'client.authentication.k8s.io/v1',
            command,
            args,
            env,
            provideClusterInfo: true,
            interactiveMode: 'Never',
          },
        })),
      }),
    );
    return path;
  };
  const aws = emulators.env;
  return {
    plugin,
    providerFile: providersFile('cpsync-providers', process.execPath, [plugin]),
    providersFile,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: emulators.directory,
      // The default credential chain of each cloud, pointed at the local clouds; no metadata probe.
      AWS_ACCESS_KEY_ID: as.aws?.accessKeyId ?? aws.AWS_ACCESS_KEY_ID!,
      AWS_SECRET_ACCESS_KEY: as.aws?.secretAccessKey ?? aws.AWS_SECRET_ACCESS_KEY!,
      ...(as.aws?.sessionToken ? { AWS_SESSION_TOKEN: as.aws.sessionToken } : {}),
      AWS_ENDPOINT_URL_STS: emulators.proxy.endpoint,
      AWS_EC2_METADATA_DISABLED: 'true',
      // The members run here, at loopback addresses: the plugin sends their tokens there.
      CPSYNC_LOCAL_CLOUDS: 'eks,gke,aks',
      // GKE through workload identity federation, exchanged at the local Google STS.
      GOOGLE_APPLICATION_CREDENTIALS: localGoogleFederation(emulators.directory, emulators.gke, as.google),
      METADATA_SERVER_DETECTION: 'none',
      AZURE_TENANT_ID: emulators.arm.tenantId,
      AZURE_CLIENT_ID: as.azure?.clientId ?? emulators.arm.clientId,
      AZURE_CLIENT_SECRET: as.azure?.clientSecret ?? emulators.arm.clientSecret,
      AZURE_AUTHORITY_HOST: emulators.arm.endpoint,
      NODE_EXTRA_CA_CERTS: aws.NODE_EXTRA_CA_CERTS!,
    },
  };
}

/**
 * One part of what `cpsync consumers <kind>` prints for the configuration `config` (`--part <part>`), run through the
 * command as a user runs it, with the plugin as the kit carries it (this Node and the bundled file); written to
 * `file`, as a consumer is given it. `args` adds to the command line. Resolves to the file.
 */
export async function printedPart(
  kit: ConsumerKit,
  config: string,
  kind: string,
  part: string,
  file: string,
  args: readonly string[] = [],
): Promise<string> {
  const printed = await runCli([
    'consumers',
    kind,
    '--config',
    config,
    '--command',
    process.execPath,
    '--plugin',
    kit.plugin,
    '--part',
    part,
    ...args,
  ]);
  if (printed.code !== 0) throw new Error(`cpsync consumers ${kind} --part ${part}: ${printed.stderr}`);
  writeFileSync(file, printed.stdout);
  return file;
}
