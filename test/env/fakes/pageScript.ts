/**
 * A listing's pages as a test scripts them: for the token a request carries (none for the first page), which of
 * the server's items the page holds (`count` of them from `from`; none makes an empty page) and the token it gives
 * for the next page (none: the last). Lets a fake server answer as a misbehaving service would: empty pages that
 * still carry a token, a token given again, a cycle. Undefined answers as the server would by itself.
 */
export type PageScript = (
  listing:
    | 'ListClusters'
    | 'ListNodegroups'
    | 'projects:search'
    | 'subscriptions'
    | 'roleAssignments'
    | 'managedClusters'
    | 'resources',
  token: string | undefined,
) => { from: number; count: number; next?: string } | undefined;
