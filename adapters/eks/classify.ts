import type { ScopeFailureReason } from '../../core/domain/model/scope.ts';
import { CpsyncError, messageOf } from '../../core/domain/errors.ts';
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

/** A successful answer that lacks what it answers (EKS describes nothing): a failed call, never the object gone. */
export class MalformedAnswerError extends CpsyncError {}

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
