/**
 * What discovery uses of Organizations (the accounts of an organization or of its OUs), in a module loaded on
 * demand: importing the SDK package itself on demand would keep every Organizations command in a bundle.
 */
export {
  OrganizationsClient,
  paginateListAccounts,
  paginateListAccountsForParent,
  paginateListOrganizationalUnitsForParent,
} from '@aws-sdk/client-organizations';
