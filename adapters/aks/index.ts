/** AKS source: managed clusters of Azure subscriptions (explicit or every one the identity can see). */
export {
  AksSource,
  enumerateAksScopes,
  type AksSourceOptions,
  type SubscriptionSelection,
} from './AksSource.ts';
export { azureErrorDetails, classifyAzureError } from './classify.ts';
export { mapAksCluster, resourceGroupOf } from './mapCluster.ts';
