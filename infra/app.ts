/**
 * The CDK app `cdk deploy` runs: the configuration comes from the file the `config` context names
 * (default cpsync.yaml); see infra/appConfig.ts for the context keys.
 *   npx cdk deploy -c config=cpsync.yaml
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { CpsyncStack } from './CpsyncStack.ts';
import { DeployConfigError, deployConfig } from './appConfig.ts';

const app = new App();
const context = (key: string) => app.node.tryGetContext(key) as string | undefined;
let config: Record<string, unknown>;
try {
  let file: string;
  ({ file, document: config } = deployConfig({
    ...(context('config') ? { config: context('config')! } : {}),
    ...(context('hubCluster') ? { hubCluster: context('hubCluster')! } : {}),
    ...(context('hubRegion') ? { hubRegion: context('hubRegion')! } : {}),
    ...(process.env.CDK_DEFAULT_REGION ? { defaultRegion: process.env.CDK_DEFAULT_REGION } : {}),
  }));
  if (file !== (context('config') ?? 'cpsync.yaml'))
    console.error(`cpsync: cpsync.yaml not found; synthesizing ${file}`);
} catch (error) {
  if (!(error instanceof DeployConfigError)) throw error;
  console.error(error.message);
  process.exit(2);
}

new CpsyncStack(app, context('stackName') ?? 'Cpsync', {
  description:
    'cpsync: ClusterProfile inventory of EKS, GKE and AKS clusters, with change events on EventBridge',
  cpsync: { config },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
