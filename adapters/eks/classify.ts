import type { ScopeFailureReason } from '../../core/domain/model/scope.ts';
import { messageOf } from '../../core/domain/errors.ts';
import { MalformedAnswerError } from '../shared/pages.ts';
import { own } from '../../core/domain/own.ts';

const BY_NAME: Readonly<Record<string, ScopeFailureReason>> = {
  AccessDenied: 'AccessDenied',
  AccessDeniedException: 'AccessDenied',
  UnauthorizedOperation: 'AccessDenied',
  UnrecognizedClientException: 'AccessDenied',
  InvalidClientTokenId: 'AccessDenied',
  ExpiredToken: 'AccessDenied',
  ExpiredTokenException: 'AccessDenied',
  AWSOrganizationsNotInUseException: 'NotRegistered',
  OptInRequired: 'NotRegistered',
  SubscriptionRequiredException: 'NotRegistered',
  AuthFailure: 'NotRegistered',
  Throttling: 'Throttled',
  ThrottlingException: 'Throttled',
  TooManyRequestsException: 'Throttled',
  RequestLimitExceeded: 'Throttled',
  TimeoutError: 'Timeout',
  RequestTimeout: 'Timeout',
  RequestTimeoutException: 'Timeout',
  AbortError: 'Timeout',
  ResourceNotFoundException: 'NotFound',
  EndlessListingError: 'InvalidResponse',
  MalformedAnswerError: 'InvalidResponse',
};

/**
 * What a successful answer describes, or a MalformedAnswerError: only EKS's own not-found (ResourceNotFoundException)
 * says a cluster, node group or access entry is gone. A 2xx answer without the object (an empty body from a proxy or
 * an endpoint override) says nothing of it, and is not taken as its deletion, nor as someone else's.
 */
export function answered<T>(described: T | undefined | null, call: string): T {
  if (described === undefined || described === null || typeof described !== 'object')
    throw new MalformedAnswerError(
      `${call}: a successful answer that describes nothing; not taken as the object gone`,
    );
  return described;
}

/**
 * A page's list of names, or a MalformedAnswerError: EKS answers every page of a listing with its list (empty when
 * there is none), so a page without one (or with something else) lists nothing, and is not taken as an empty listing
 * (a region with no clusters, whose profiles would then go).
 */
export function listed(names: unknown, call: string): string[] {
  if (!Array.isArray(names) || !names.every((name) => typeof name === 'string'))
    throw new MalformedAnswerError(
      `${call}: a page without its list of names; not taken as an empty listing`,
    );
  return names as string[];
}

/** The scope failure reason of an AWS SDK error: by its name first, then by its HTTP status. */
export function classifyAwsError(error: unknown): ScopeFailureReason {
  const name = (error as { name?: string } | undefined)?.name ?? '';
  const known = own(BY_NAME, name);
  if (known) return known;
  const status = (error as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata
    ?.httpStatusCode;
  if (status === 401 || status === 403) return 'AccessDenied';
  if (status === 429) return 'Throttled';
  if ((error as { code?: string } | undefined)?.code === 'ETIMEDOUT') return 'Timeout';
  return 'Unknown';
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${messageOf(error)}` : String(error);
}
