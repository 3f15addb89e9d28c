import type { ScopeFailureReason } from '../../core/domain/model/scope.ts';
import { EndlessListingError, MalformedAnswerError } from '../shared/pages.ts';

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
  if (error instanceof EndlessListingError || error instanceof MalformedAnswerError) return 'InvalidResponse';
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

/**
 * Whether an error of the read of a cluster says that very cluster is not there: NOT_FOUND (a 404) in GKE's own
 * error document, whose message names it as GKE words it ("Not found: projects/<project>/locations/<location>/
 * clusters/<name>.", "No cluster named '<name>' in <project>."). Anything else is a failed read, never a deletion:
 * a not-found of a project or of another cluster, a route a proxy or gateway does not know (even one that repeats
 * the cluster's path), and any answer that is not Google's error document (an HTML page, which the client reports
 * as NOT_FOUND when its status is 404, with the page in its message).
 */
export function googleClusterGone(
  error: unknown,
  cluster: { project: string; location: string; name: string },
): boolean {
  const e = (error ?? {}) as GoogleErrorLike;
  // NOT_FOUND as the answer's own status says it, over HTTP a 404 too (over gRPC there is no HTTP status).
  if (Number(e.code) !== GrpcCode.NOT_FOUND || (e.httpStatusCode ?? 404) !== 404) return false;
  if (classifyGoogleError(error) === 'InvalidResponse') return false;
  const message = e.message ?? '';
  const [project, location, name] = [cluster.project, cluster.location, cluster.name].map((part) =>
    part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
  );
  return new RegExp(
    `^(?:\\d+ NOT_FOUND: )?(?:Not found: projects/${project}/(?:locations|zones)/${location}/clusters/${name}|No cluster named '${name}' in ${project})(?![\\w/-])`,
    'i',
  ).test(message);
}

/**
 * An answer's error from Resource Manager's client (project search, project IAM), told as the newer Google
 * clients tell theirs: the error document's own message, its status and ErrorInfo reason kept as fields.
 */
export class GoogleApiError extends Error {
  /** The HTTP status, as Resource Manager's client reports it (409, not ABORTED's 10). */
  readonly code: number;
  readonly httpStatusCode: number;
  /** google.rpc.Code name, e.g. PERMISSION_DENIED. */
  readonly status?: string;
  /** google.rpc.ErrorInfo reason, e.g. SERVICE_DISABLED. */
  readonly reason?: string;
  constructor(
    message: string,
    fields: { code: number; status?: string; reason?: string },
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'GoogleApiError';
    this.code = fields.code;
    this.httpStatusCode = fields.code;
    if (fields.status !== undefined) this.status = fields.status;
    if (fields.reason !== undefined) this.reason = fields.reason;
  }
}

const asRecord = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;

/** The start of google-gax's message when its retries ran out, up to the last error it quotes. */
const RETRIES_RAN_OUT =
  /^(?:Exceeded maximum number of retries|Total timeout of API \S+ exceeded \d+ milliseconds) retrying error (?:\w*Error: )?/;

/** The JSON object `text` starts with (a string's braces are not counted), or undefined. */
function leadingObject(text: string): string | undefined {
  if (!text.startsWith('{')) return undefined;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i += 1;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth += 1;
    else if (c === '}' && --depth === 0) return text.slice(0, i + 1);
  }
  return undefined;
}

/**
 * Resource Manager's client (it ships an older google-gax) rejects with the HTTP error of its transport, whose
 * message is the answer's whole body: `{"error":{"code":403,"message":"The caller does not have permission",…}}`.
 * That error as a GoogleApiError saying the document's message (the cause keeps the rest); any other error as it is.
 */
export function readableGoogleError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof GoogleApiError) return error;
  let text = error.message.trim();
  // Retries that ran out: the client's own message quotes the last answer's error, then the earlier ones.
  const ranOut = RETRIES_RAN_OUT.exec(text);
  if (ranOut) text = leadingObject(text.slice(ranOut[0].length)) ?? '';
  if (!text.startsWith('{')) return error;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    return error;
  }
  const body = asRecord(asRecord(document)?.error);
  const message = body?.message;
  if (typeof message !== 'string' || message.trim() === '') return error;
  const given = (error as { code?: unknown }).code;
  const code = typeof body?.code === 'number' ? body.code : typeof given === 'number' ? given : Number(given);
  const reason = (Array.isArray(body?.details) ? body.details : [])
    .map((detail) => asRecord(detail))
    .find((detail) => String(detail?.['@type'] ?? '').endsWith('google.rpc.ErrorInfo'))?.reason;
  return new GoogleApiError(
    ranOut ? `${message} (still so when the retries ran out)` : message,
    {
      code: Number.isFinite(code) ? code : 0,
      ...(typeof body?.status === 'string' ? { status: body.status } : {}),
      ...(typeof reason === 'string' ? { reason } : {}),
    },
    { cause: error },
  );
}

/**
 * What Resource Manager's calls are asked again on: its client reports an answer's HTTP status as the error's
 * code (503, not UNAVAILABLE's 14), so both spellings of throttled, unavailable and timed out.
 */
export const RESOURCE_MANAGER_RETRY_CODES: readonly number[] = [
  GrpcCode.RESOURCE_EXHAUSTED,
  GrpcCode.UNAVAILABLE,
  GrpcCode.DEADLINE_EXCEEDED,
  429,
  503,
  504,
];

/** `call` to Resource Manager, its answer's error made readable (see `readableGoogleError`). */
export async function askingResourceManager<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw readableGoogleError(error);
  }
}
