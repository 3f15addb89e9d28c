/**
 * The CDK app `cdk deploy` runs. The cpsync configuration comes from the file named by the context
 * value `config` (default cpsync.yaml; cpsync.example.yaml when that does not exist):
 *   npx cdk deploy -c config=cpsync.yaml
 */
import { existsSync, readFileSync } from 'node:fs';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { parse } from 'yaml';
import { CpsyncStack } from './CpsyncStack.ts';

const app = new App();
const wanted = (app.node.tryGetContext('config') as string | undefined) ?? 'cpsync.yaml';
const file = existsSync(wanted) ? wanted : 'cpsync.example.yaml';
if (file !== wanted) console.error(`cpsync: ${wanted} not found; synthesizing ${file}`);
const config = parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
const hub = config.hub as Record<string, unknown> | undefined;
if (!hub || 'directory' in hub || 'kubeconfig' in hub) {
  // The functions reach the hub with IAM (an EKS hub) or a kubeconfig from Secrets Manager.
  config.hub = {
    eks: {
      clusterName: (app.node.tryGetContext('hubCluster') as string | undefined) ?? 'cpsync-hub',
      region: (app.node.tryGetContext('hubRegion') as string | undefined) ?? 'us-east-1',
    },
  };
}

new CpsyncStack(app, (app.node.tryGetContext('stackName') as string | undefined) ?? 'Cpsync', {
  description:
    'cpsync: ClusterProfile inventory of EKS, GKE and AKS clusters, with change events on EventBridge',
  cpsync: { config },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
