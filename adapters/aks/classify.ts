import type { ScopeFailureReason } from '../../core/domain/model/scope.ts';
import { own } from '../../core/domain/own.ts';
import { EndlessListingError } from '../shared/pages.ts';

const BY_CODE: Readonly<Record<string, ScopeFailureReason>> = {
  AuthorizationFailed: 'AccessDenied',
  InvalidAuthenticationToken: 'AccessDenied',
  InvalidAuthenticationTokenTenant: 'AccessDenied',
  AuthenticationFailed: 'AccessDenied',
  LinkedAuthorizationFailed: 'AccessDenied',
  MissingSubscriptionRegistration: 'NotRegistered',
  SubscriptionNotRegistered: 'NotRegistered',
  DisallowedProvider: 'NotRegistered',
  SubscriptionNotFound: 'NotFound',
  ReadOnlyDisabledSubscription: 'NotRegistered',
  TooManyRequests: 'Throttled',
  SubscriptionRequestsThrottled: 'Throttled',
  TenantRequestsThrottled: 'Throttled',
  GatewayTimeout: 'Timeout',
  RequestTimeout: 'Timeout',
};

/** @azure/identity errors that mean the identity could not sign in. */
const AUTH_ERROR_NAMES = new Set([
  'CredentialUnavailableError',
  'AuthenticationError',
  'AuthenticationRequiredError',
  'AggregateAuthenticationError',
]);

interface AzureErrorLike {
  code?: string;
  statusCode?: number;
  name?: string;
  message?: string;
  response?: { bodyAsText?: string | null };
}

/**
 * The ARM error code and message of an SDK error. Paged listings report only "Pagination failed with
 * unexpected statusCode …", so the ARM error body is read from the response when it is there.
 */
export function azureErrorDetails(error: unknown): { code?: string; message: string } {
  const e = (error ?? {}) as AzureErrorLike;
  try {
    const body = JSON.parse(e.response?.bodyAsText ?? '') as { error?: { code?: string; message?: string } };
    if (body.error?.code || body.error?.message) {
      return {
        ...(body.error.code ? { code: body.error.code } : {}),
        message: `${body.error.code ?? ''}: ${body.error.message ?? ''}`.replace(/^: /, ''),
      };
    }
  } catch {
    // not a JSON body
  }
  const status = e.statusCode ? ` (HTTP ${e.statusCode})` : '';
  const message = e.message ?? String(error);
  return e.code
    ? { code: e.code, message: `${e.code}${status}: ${message}` }
    : { message: `${message}${status}` };
}

/**
 * ARM's codes for a resource that is not there: the resource itself, or the resource group it was in (ARM's
 * "resource not found" errors). `SubscriptionNotFound` is not among them: a subscription cpsync cannot see (access
 * taken, another tenant) says nothing of the clusters in it.
 */
const GONE_CODES = new Set(['ResourceNotFound', 'NotFound', 'ResourceGroupNotFound']);

/**
 * Whether an error of a read of one resource (a managed cluster by its id) says that resource is gone: a 404 with
 * one of ARM's codes for it. Any other 404 (a subscription not found, a proxy's page without a code) is a failed
 * read, never a deletion.
 */
export function azureResourceGone(error: unknown): boolean {
  if ((error as AzureErrorLike | undefined)?.statusCode !== 404) return false;
  const code = azureErrorDetails(error).code;
  return code !== undefined && GONE_CODES.has(code);
}

/** The scope failure reason of an Azure SDK error: by its ARM error code, then by HTTP status. */
export function classifyAzureError(error: unknown): ScopeFailureReason {
  if (error instanceof EndlessListingError) return 'InvalidResponse';
  const e = { ...((error ?? {}) as AzureErrorLike), code: azureErrorDetails(error).code };
  const known = e.code ? own(BY_CODE, e.code) : undefined;
  if (known) return known;
  if (e.name && AUTH_ERROR_NAMES.has(e.name)) {
    return 'AccessDenied';
  }
  if (e.statusCode === 401 || e.statusCode === 403) return 'AccessDenied';
  if (e.statusCode === 429) return 'Throttled';
  if (e.statusCode === 408 || e.statusCode === 504 || e.name === 'AbortError') return 'Timeout';
  if (e.statusCode === 404) return 'NotFound';
  return 'Unknown';
}
