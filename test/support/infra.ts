/** What the CDK tests synthesize with: the example configuration with an EKS hub, an account and region. */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export const EXAMPLE = parse(
  readFileSync(new URL('../../cpsync.example.yaml', import.meta.url), 'utf8'),
) as Record<string, unknown>;
/** The example configuration, with a hub the functions can use. */
export const CONFIG = { ...EXAMPLE, hub: { eks: { clusterName: 'hub', region: 'us-east-1' } } };
export const ENV = { account: '123456789012', region: 'us-east-1' };
/** Skips asset bundling for tests that only look at the template's shape. */
export const NO_BUNDLING = { 'aws:cdk:bundling-stacks': [] };
/** A consumer the accessGrants feature grants `view` on EKS, its role of the member account 111122223333. */
export const ARGOCD_CONSUMER = {
  name: 'argocd',
  namespaces: ['cluster-inventory'],
  level: 'view',
  identities: { eks: { roleArn: 'arn:aws:iam::111122223333:role/argocd' } },
};
