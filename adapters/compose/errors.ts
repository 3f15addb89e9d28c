import { CpsyncError } from '../../core/domain/errors.ts';

/** A configured part that cannot be built (a file, a secret or a kubeconfig that cannot be used). */
export class CompositionError extends CpsyncError {}
