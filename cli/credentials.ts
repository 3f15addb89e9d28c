import { Command, CommanderError, Option } from 'commander';
import { firstLineOf } from '../core/domain/errors.ts';
import { printable } from '../core/domain/text.ts';
import { withDeadline } from '../core/sync/deadline.ts';
import { clusterToken, type TokenSettings } from '../adapters/credentials/tokens.ts';
import {
  EXEC_API_VERSIONS,
  readExecInfo,
  resolveTarget,
  serverProblem,
  TargetError,
  type TargetFlags,
} from '../adapters/credentials/target.ts';

export interface CredentialsIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  now?: () => Date;
}

interface Flags extends TargetFlags {
  roleArn?: string;
  roleName?: string;
  googleCredentials?: string;
  localClouds?: string;
  apiVersion?: string;
  timeout: number;
}

/**
 * The first line of what went wrong, without a stack, a token or a secret (SDK messages carry none), shown as
 * text: a cloud's or the profile's words never act on the terminal.
 */
const oneLine = (error: unknown) => printable(firstLineOf(error, 400));

/** The longest wait a Node.js timer holds (2^31 - 1 ms). */
const MAX_TIMER_MILLIS = 2 ** 31 - 1;

function positiveSeconds(value: string): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new Error(`--timeout: expected seconds > 0, got ${JSON.stringify(value)}`);
  // A longer wait than a timer can hold would be cut to a millisecond, and every token request would fail at once.
  if (seconds * 1000 > MAX_TIMER_MILLIS)
    throw new Error(
      `--timeout: expected at most ${Math.floor(MAX_TIMER_MILLIS / 1000)} seconds, got ${JSON.stringify(value)}`,
    );
  return seconds;
}

/** The options of `cpsync credentials` (and of the standalone plugin, which is that command alone). */
export function credentialsOptions(command: Command): Command {
  return command
    .description(
      'client-go exec credential plugin: print a short-lived token for the cluster of a ClusterProfile (EKS, GKE, AKS)',
    )
    .addOption(
      new Option(
        '--provider <provider>',
        "the cluster's cloud, when KUBERNETES_EXEC_INFO carries no cluster info",
      ).choices(['eks', 'gke', 'aks']),
    )
    .option('--cluster-name <name>', "the cluster's name in its cloud")
    .option('--region <region>', "EKS: the cluster's region")
    .option('--account <id>', "EKS: the cluster's AWS account")
    .option('--project <id>', "GKE: the cluster's project")
    .option('--location <location>', "GKE: the cluster's region or zone")
    .option('--subscription <id>', "AKS: the cluster's subscription")
    .option('--tenant-id <id>', 'AKS: the Entra tenant to ask for the token')
    .option(
      '--role-arn <arn>',
      'EKS: assume this role first ({accountId}, {region} and {partition} are filled in) [env CPSYNC_EKS_ROLE_ARN]',
    )
    .option(
      '--role-name <name>',
      "EKS: assume this role of the cluster's account first [env CPSYNC_EKS_ROLE_NAME]",
    )
    .option('--google-credentials <file>', 'GKE: a key file instead of Application Default Credentials')
    .option(
      '--local-clouds <clouds>',
      'clouds whose clusters run on this machine (local emulators, comma-separated): their servers may be loopback addresses [env CPSYNC_LOCAL_CLOUDS]',
    )
    .addOption(
      new Option(
        '--api-version <version>',
        'ExecCredential version when KUBERNETES_EXEC_INFO is absent',
      ).choices([...EXEC_API_VERSIONS]),
    )
    .addOption(
      new Option('--timeout <seconds>', 'give up after this long').default(30).argParser(positiveSeconds),
    );
}

/**
 * Prints an ExecCredential for the cluster client-go describes in KUBERNETES_EXEC_INFO (the profile's
 * exec extension, when the consumer sets provideClusterInfo: true) or the flags describe. Resolves to
 * the exit code: 0 with the credential on stdout, 1 with one line on stderr.
 */
export async function printCredential(flags: Flags, io: CredentialsIo): Promise<number> {
  const now = io.now ?? (() => new Date());
  let provider: string | undefined = flags.provider;
  try {
    const info = readExecInfo(io.env.KUBERNETES_EXEC_INFO);
    const target = resolveTarget(info?.extension, flags);
    provider = target.provider;
    if (info?.server !== undefined) {
      const localClouds = (flags.localClouds ?? io.env.CPSYNC_LOCAL_CLOUDS ?? '')
        .split(',')
        .map((cloud) => cloud.trim())
        .filter(Boolean);
      const problem = serverProblem(info.server, target, localClouds);
      if (problem) throw new TargetError(problem);
    }
    const roleArn = flags.roleArn ?? io.env.CPSYNC_EKS_ROLE_ARN;
    const roleName = flags.roleName ?? io.env.CPSYNC_EKS_ROLE_NAME;
    const settings: TokenSettings = {
      env: io.env,
      now,
      ...(roleArn ? { roleArn } : {}),
      ...(roleName ? { roleName } : {}),
      ...(flags.googleCredentials ? { googleCredentialsFile: flags.googleCredentials } : {}),
    };
    const token = await withDeadline('the token (--timeout)', flags.timeout * 1000, () =>
      clusterToken(target, settings),
    );
    const credential = {
      apiVersion: info?.apiVersion ?? flags.apiVersion ?? EXEC_API_VERSIONS[0],
      kind: 'ExecCredential',
      status: {
        token: token.token,
        ...(token.expiresAt
          ? { expirationTimestamp: token.expiresAt.toISOString().replace(/\.\d{3}Z$/, 'Z') }
          : {}),
      },
    };
    io.stdout.write(`${JSON.stringify(credential)}\n`);
    return 0;
  } catch (error) {
    io.stderr.write(`cpsync credentials: ${provider ? `${printable(provider)}: ` : ''}${oneLine(error)}\n`);
    return 1;
  }
}

/** Runs the standalone plugin (`cpsync-credentials [flags]`); resolves to the exit code. */
export async function credentialsMain(argv: string[], io: CredentialsIo): Promise<number> {
  let code = 0;
  const command = credentialsOptions(new Command('cpsync-credentials'))
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .action(async (flags: Flags) => {
      code = await printCredential(flags, io);
    });
  try {
    await command.parseAsync(argv, { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    io.stderr.write(`cpsync credentials: ${oneLine(error)}\n`);
    return 1;
  }
}
