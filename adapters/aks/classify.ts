import type { ScopeFailureReason } from '../../core/domain/model/scope.ts';
import { own } from '../../core/domain/own.ts';
import { EndlessListingError, MalformedAnswerError } from '../shared/pages.ts';

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
  const e = error as AzureErrorLike | undefined;
  if (e?.statusCode !== 404) return false;
  // ARM's own answer, in its envelope (`{"error": {"code": …}}`): a 404 from a gateway or proxy with a code of its own
  // at the top of its body (which the SDK reads as the error's code all the same) says nothing of the cluster.
  type Envelope = { error?: { code?: unknown } } | null | undefined;
  let body: Envelope = (e as { details?: Envelope }).details;
  if (e.response?.bodyAsText)
    try {
      body = JSON.parse(e.response.bodyAsText) as Envelope;
    } catch {
      return false;
    }
  const code = body?.error?.code;
  return typeof code === 'string' && GONE_CODES.has(code);
}

/**
 * Options for an ARM listing whose every page must carry its `value` list (as ARM answers every page, empty when there
 * is none): a page without it fails the listing, where the SDK would read it as an empty page and the listing as whole.
 */
export function wholePages(listing: string): { onResponse: (raw: unknown, flat: unknown) => void } {
  return {
    onResponse: (_raw, flat) => {
      if (!Array.isArray((flat as { value?: unknown } | null | undefined)?.value))
        throw new MalformedAnswerError(
          `${listing}: a page without its list (value); not taken as a page of none`,
        );
    },
  };
}

/** The scope failure reason of an Azure SDK error: by its ARM error code, then by HTTP status. */
export function classifyAzureError(error: unknown): ScopeFailureReason {
  if (error instanceof EndlessListingError || error instanceof MalformedAnswerError) return 'InvalidResponse';
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
