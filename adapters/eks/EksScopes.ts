import type { Account, OrganizationsClient } from '@aws-sdk/client-organizations';
import { ALL_REGIONS, type Scope } from '../../core/domain/model/scope.ts';
import type { EksSource } from './EksSource.ts';
import { messageOf } from '../../core/domain/errors.ts';
import { PageTokens } from '../shared/pages.ts';

/** How to find the AWS accounts to list. */
export type AccountSelection =
  | { accounts: string[] }
  | {
      organization: {
        /** Only accounts under these OUs (or roots), searched recursively. @default every account */
        includeOus?: string[];
        /** No account under these OUs, searched recursively. @default none */
        excludeOus?: string[];
      };
    };

export interface EksScopesOptions {
  accounts: AccountSelection;
  /** Regions to list in every account. @default every region enabled for the account */
  regions?: string[];
  /** The Organizations client (management or delegated administrator account). */
  organizations?: OrganizationsClient;
  /** Only these of the selected accounts (e.g. to check what a requested scope is covered by). */
  onlyAccounts?: readonly string[];
}

/** Where a scope enumeration gave up on an account (e.g. its role cannot be assumed to list its regions). */
export interface EnumerationProblem {
  account: string;
  message: string;
}

function isActive(account: Account): boolean {
  const state = (account as { State?: string }).State ?? account.Status;
  return state === undefined || state === 'ACTIVE';
}

/** The Organizations paginators, loaded only for a configuration that selects accounts by organization. */
const organizationsApi = () => import('./organizationsApi.ts');

async function accountsUnder(client: OrganizationsClient, parentIds: string[]): Promise<Account[]> {
  const { paginateListAccountsForParent, paginateListOrganizationalUnitsForParent } =
    await organizationsApi();
  const found: Account[] = [];
  const queue = [...new Set(parentIds)];
  // Each unit walked once: a unit listed under itself or under one of its own would be walked forever.
  const walked = new Set(queue);
  while (queue.length > 0) {
    const parent = queue.shift()!;
    const accountPages = new PageTokens(`Organizations ListAccountsForParent of ${parent}`);
    for await (const page of paginateListAccountsForParent({ client }, { ParentId: parent })) {
      found.push(...(page.Accounts ?? []));
      accountPages.next(page.NextToken);
    }
    const unitPages = new PageTokens(`Organizations ListOrganizationalUnitsForParent of ${parent}`);
    for await (const page of paginateListOrganizationalUnitsForParent({ client }, { ParentId: parent })) {
      for (const id of (page.OrganizationalUnits ?? []).map((ou) => ou.Id)) {
        if (id && !walked.has(id)) {
          walked.add(id);
          queue.push(id);
        }
      }
      unitPages.next(page.NextToken);
    }
  }
  return found;
}

/** The account ids selected: explicit, or the organization's active accounts with the OU filters applied. */
export async function selectAccounts(
  selection: AccountSelection,
  organizations?: OrganizationsClient,
): Promise<string[]> {
  if ('accounts' in selection) return [...new Set(selection.accounts)].sort();
  if (!organizations) throw new Error('accounts.organization needs an Organizations client');
  const { includeOus, excludeOus } = selection.organization;
  const { paginateListAccounts } = await organizationsApi();
  let accounts: Account[] = [];
  if (includeOus && includeOus.length > 0) accounts = await accountsUnder(organizations, includeOus);
  else {
    const pages = new PageTokens('Organizations ListAccounts');
    for await (const page of paginateListAccounts({ client: organizations }, {})) {
      accounts.push(...(page.Accounts ?? []));
      pages.next(page.NextToken);
    }
  }
  const excluded = new Set(
    excludeOus && excludeOus.length > 0
      ? (await accountsUnder(organizations, excludeOus)).map((a) => a.Id)
      : [],
  );
  return [
    ...new Set(accounts.filter((a) => isActive(a) && a.Id && !excluded.has(a.Id)).map((a) => a.Id!)),
  ].sort();
}

/**
 * Every (account, region) scope to list: the selected accounts × the configured regions, or × each
 * account's enabled regions. An account whose regions cannot be read is reported, not dropped silently.
 */
export async function enumerateEksScopes(
  source: EksSource,
  options: EksScopesOptions,
): Promise<{ scopes: Scope[]; problems: EnumerationProblem[] }> {
  const only = options.onlyAccounts && new Set(options.onlyAccounts);
  const accounts = (await selectAccounts(options.accounts, options.organizations)).filter(
    (account) => !only || only.has(account),
  );
  const scopes: Scope[] = [];
  const problems: EnumerationProblem[] = [];
  for (const account of accounts) {
    let regions = options.regions;
    if (!regions) {
      try {
        regions = await source.enabledRegions(account);
      } catch (error) {
        // Listed as one account-wide scope: its listing fails the same way and is reported as a failed scope.
        problems.push({ account, message: messageOf(error) });
        scopes.push({ provider: 'eks', account, region: ALL_REGIONS });
        continue;
      }
    }
    for (const region of [...new Set(regions)].sort()) scopes.push({ provider: 'eks', account, region });
  }
  return { scopes, problems };
}
