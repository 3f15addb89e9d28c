import { CpsyncError } from '../../core/domain/errors.ts';

/**
 * A listing that would not end: its service gave a page token it had given before (the client would ask for that
 * page again forever), or more pages than any listing cpsync reads holds. What was read of it is not the whole
 * listing, and is never taken as such: its scope fails (`InvalidResponse`) and nothing is deleted for it.
 */
export class EndlessListingError extends CpsyncError {}

/**
 * A successful answer that lacks what it answers (an empty body from a proxy, a gateway or an endpoint override; a
 * page without its list; a policy without its etag): a failed call (`InvalidResponse`), never the object gone, none
 * of them there, or a listing of all.
 */
export class MalformedAnswerError extends CpsyncError {}

/**
 * Most pages followed in one listing. The longest cpsync reads are an organization's accounts (20 a page) and a
 * hub namespace's profiles (500 a page): 10,000 pages is 200,000 accounts, far beyond any organization's quota.
 */
const MOST_PAGES = 10_000;

/**
 * The page tokens of one listing, each let through once. The SDKs follow a listing's tokens as the service gives
 * them: the AWS SDK's paginators stop on a repeated token only when asked to, and then end the listing as if it
 * were whole; Azure's follow `nextLink` for as long as there is one. A token given again means a listing that
 * would never end, so it is refused, as is a listing longer than `most` pages; so is every page once `signal` is
 * aborted (the Azure SDKs drop the caller's signal after the first page).
 */
export class PageTokens {
  readonly #seen = new Set<string>();
  readonly #listing: string;
  readonly #most: number;
  readonly #signal: AbortSignal | undefined;

  constructor(listing: string, options: { signal?: AbortSignal | undefined; most?: number } = {}) {
    this.#listing = listing;
    this.#most = options.most ?? MOST_PAGES;
    this.#signal = options.signal;
  }

  /**
   * The token of the page after the one just read: undefined when there is none (the listing is whole), else the
   * token, to be followed. Throws EndlessListingError for a token given before or a page beyond the most, and the
   * signal's reason once it is aborted.
   */
  next(token: string | null | undefined): string | undefined {
    this.#signal?.throwIfAborted();
    if (token === undefined || token === null || token === '') return undefined;
    if (this.#seen.has(token))
      throw new EndlessListingError(
        `${this.#listing}: the service gave a page token it had given before (after ${this.#seen.size + 1} pages), so the listing would never end; what was read of it is not taken as whole`,
      );
    if (this.#seen.size + 1 >= this.#most)
      throw new EndlessListingError(
        `${this.#listing}: more than ${this.#most} pages, so the listing is taken as one that would never end; what was read of it is not taken as whole`,
      );
    this.#seen.add(token);
    return token;
  }
}

/** An Azure SDK listing, read page by page (`byPage`). */
interface AzurePaged<T> {
  byPage(): AsyncIterableIterator<T[]>;
}

/**
 * Every item of an Azure SDK listing, its pages' links (`nextLink`) each let through once (see PageTokens):
 * `continuation` reads a page's link as its SDK keeps it. The SDK asks for the next page only once the items of
 * this one are taken, so a link refused is never followed.
 */
export async function* azureItems<T>(
  listing: string,
  paged: AzurePaged<T>,
  continuation: (page: T[]) => string | undefined,
  signal?: AbortSignal,
): AsyncGenerator<T> {
  const tokens = new PageTokens(listing, { signal });
  for await (const page of paged.byPage()) {
    yield* page;
    tokens.next(continuation(page));
  }
}

/** A page's link as the Azure SDKs generated from TypeSpec keep it: on the page itself. */
export const continuationOnPage = (page: unknown[]): string | undefined =>
  (page as { continuationToken?: string }).continuationToken;
