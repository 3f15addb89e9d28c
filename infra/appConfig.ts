/**
 * The configuration `cdk deploy` deploys, from the file the `config` context names and the context
 * values that may complete it. The Lambda functions reach the hub with IAM (`hub.eks`) or a kubeconfig
 * kept in Secrets Manager (`hub.kubeconfigSecretArn`); a configuration whose hub is a directory or a
 * local kubeconfig file (the CLI's) cannot run there, and is refused with what to set — unless the
 * `hubCluster` context names an EKS hub to use instead.
 *
 * Context keys (`-c key=value`):
 *   config      the configuration file (default cpsync.yaml)
 *   hubCluster  the EKS cluster the functions use as the hub, when the file's hub is not one they can use
 *   hubRegion   that cluster's region (default: the region cdk deploys to, else us-east-1)
 *   stackName   the stack's name (default Cpsync)
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';

export interface DeployContext {
  config?: string;
  hubCluster?: string;
  hubRegion?: string;
  /** The region `cdk` deploys to (`CDK_DEFAULT_REGION`, from the environment or the AWS profile), if it knows one. */
  defaultRegion?: string;
}

/** A configuration that cannot be deployed as it is; the message says what to set. */
export class DeployConfigError extends Error {}

const DEFAULT_FILE = 'cpsync.yaml';
const EXAMPLE_FILE = 'cpsync.example.yaml';

/**
 * The document to deploy and the file it came from. Without cpsync.yaml the example is used (so that
 * `cdk synth` works in a fresh clone), said on stderr by the app.
 */
export function deployConfig(context: DeployContext): { file: string; document: Record<string, unknown> } {
  const wanted = context.config ?? DEFAULT_FILE;
  const file = !existsSync(wanted) && wanted === DEFAULT_FILE ? EXAMPLE_FILE : wanted;
  if (!existsSync(file))
    throw new DeployConfigError(
      `cpsync: ${file} not found: copy ${EXAMPLE_FILE} to ${file} and edit it (providers, hub), or name another file with -c config=<file>`,
    );
  const document = (parse(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
  const hub = document.hub as Record<string, unknown> | undefined;
  if (hub && ('eks' in hub || 'kubeconfigSecretArn' in hub)) return { file, document };
  if (context.hubCluster)
    return {
      file,
      document: {
        ...document,
        hub: {
          eks: {
            clusterName: context.hubCluster,
            // The stack's own region by default: in its partition (a hub in us-east-1 is out of reach from aws-cn).
            region: context.hubRegion ?? context.defaultRegion ?? 'us-east-1',
          },
        },
      },
    };
  const kind = !hub ? 'no hub (the CLI default: ./inventory)' : `hub.${Object.keys(hub)[0] ?? '?'}`;
  throw new DeployConfigError(
    `cpsync: ${file} has ${kind}, which the Lambda functions cannot use. Set hub.eks { clusterName, region } (IAM-signed tokens) or hub.kubeconfigSecretArn in ${file}, or deploy with -c hubCluster=<EKS cluster> [-c hubRegion=<region>].`,
  );
}
