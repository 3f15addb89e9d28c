import type { ScopeFailureReason } from '../../core/domain/model/scope.ts';

/** gRPC status codes the Google clients report (also over their REST transport). */
export const GrpcCode = {
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

interface GoogleErrorLike {
  name?: string;
  code?: number | string;
  httpStatusCode?: number;
  reason?: string;
  message?: string;
}

/**
 * The scope failure reason of a Google API error. A disabled API is a PERMISSION_DENIED whose
 * ErrorInfo reason is SERVICE_DISABLED; codes may arrive as gRPC codes or as HTTP statuses.
 */
export function classifyGoogleError(error: unknown): ScopeFailureReason {
  const e = (error ?? {}) as GoogleErrorLike;
  const code = typeof e.code === 'number' ? e.code : Number(e.code);
  const http = e.httpStatusCode ?? (code >= 100 ? code : undefined);
  // An answer that is not the API's JSON (an HTML page from a proxy, a truncated body). The REST
  // transport reports it as unavailable and retries it; when retries run out its message still names it.
  if (
    e.name === 'SyntaxError' ||
    /is not valid JSON|could not be decoded|Unexpected (token|end of JSON)/i.test(e.message ?? '')
  )
    return 'InvalidResponse';
  // When retries run out the client reports DEADLINE_EXCEEDED and names the last error in its message.
  if (
    /maximum number of retries/i.test(e.message ?? '') &&
    /RESOURCE_EXHAUSTED|quota|rate limit|429/i.test(e.message ?? '')
  )
    return 'Throttled';
  if (e.reason === 'SERVICE_DISABLED' || /has not been used in project|is disabled/i.test(e.message ?? ''))
    return 'ApiNotEnabled';
  if (
    code === GrpcCode.PERMISSION_DENIED ||
    code === GrpcCode.UNAUTHENTICATED ||
    http === 401 ||
    http === 403
  )
    return 'AccessDenied';
  if (code === GrpcCode.RESOURCE_EXHAUSTED || http === 429) return 'Throttled';
  if (code === GrpcCode.DEADLINE_EXCEEDED || http === 504) return 'Timeout';
  if (code === GrpcCode.NOT_FOUND || http === 404) return 'NotFound';
  if ((error as { name?: string } | undefined)?.name === 'AbortError') return 'Timeout';
  return 'Unknown';
}
