import { CpsyncError } from '../../core/domain/errors.ts';

/** A hub request that failed; `status` is the HTTP status when the hub answered. */
export class HubError extends CpsyncError {
  readonly operation: string;
  readonly target: string;
  readonly status?: number;
  constructor(operation: string, target: string, detail: string, status?: number, options?: ErrorOptions) {
    super(`hub ${operation} ${target}: ${detail}`, options);
    this.operation = operation;
    this.target = target;
    if (status !== undefined) this.status = status;
  }
}

/** The hub refused the identity cpsync runs as (HTTP 401/403). */
export class HubForbiddenError extends HubError {}

/** The hub rejected the object (HTTP 422), e.g. a change to the immutable `spec.clusterManager`. */
export class HubRejectedError extends HubError {}

/** The object changed or is held by someone else (HTTP 409). */
export class HubConflictError extends HubError {}

/** The hub could not be reached or answered 5xx/429; worth retrying on the next run. */
export class HubUnavailableError extends HubError {}
