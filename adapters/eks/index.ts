/** EKS source: clusters of AWS accounts (explicit or from AWS Organizations) and regions. */
export {
  awsClientFactory,
  type AwsClientFactory,
  type AwsClientOptions,
  type AwsService,
} from './awsClients.ts';
export { classifyAwsError } from './classify.ts';
export {
  enumerateEksScopes,
  selectAccounts,
  type AccountSelection,
  type EksScopesOptions,
  type EnumerationProblem,
} from './EksScopes.ts';
export { EksSource, type EksSourceOptions } from './EksSource.ts';
export { mapEksCluster } from './mapCluster.ts';
