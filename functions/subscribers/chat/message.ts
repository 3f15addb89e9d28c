/**
 * The message about one sync (or run): a tally of its notices, each cluster told once per kind across
 * batches, and the message composed from it — a title that counts everything, the first lines, how many
 * more — whatever the chat.
 */
import { createHash } from 'node:crypto';
import { fitText } from '../../../core/domain/properties.ts';
import { printable } from '../../../core/domain/text.ts';
import { KINDS, type Notice, type NoticeKind } from './notices.ts';

/** The longest line of a message, its subject included. */
const MAX_LINE_CHARS = 300;

/** A message, whatever the chat: a title that counts everything, the first lines, how many more. */
export interface ChatMessage {
  title: string;
  lines: Array<{ subject: string; text: string }>;
  more: number;
  footer: string;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** What a message tells of one sync: how many notices of each kind, and the first lines of each. */
export interface Tally {
  counts: Partial<Record<NoticeKind, number>>;
  /** Per kind, its first `maxLines` notices (a message lists at most that many in all). */
  lines: Partial<Record<NoticeKind, Array<{ subject: string; text: string }>>>;
  /**
   * Per kind, the keys told (hashed: a digest of thousands of clusters stays small), so that a cluster whose
   * copies arrive in several batches is still told once. Absent in digests written before it was kept.
   */
  told?: Partial<Record<NoticeKind, string[]>>;
}

/** A notice's key as a tally keeps it: 66 bits of its hash, in 11 characters. */
const toldKey = (key: string) => createHash('sha256').update(key).digest('base64url').slice(0, 11);

/** `notices` added to `tally` (a new one when none is given), each key told once per kind. */
export function addToTally(
  notices: readonly Notice[],
  maxLines: number,
  tally: Tally = { counts: {}, lines: {} },
): Tally {
  const told = new Map<NoticeKind, Set<string>>();
  const toldOf = (kind: NoticeKind) => {
    let keys = told.get(kind);
    if (!keys) told.set(kind, (keys = new Set(tally.told?.[kind] ?? [])));
    return keys;
  };
  for (const notice of notices) {
    const keys = toldOf(notice.kind);
    const key = toldKey(notice.key);
    if (keys.has(key)) continue;
    keys.add(key);
    tally.counts[notice.kind] = (tally.counts[notice.kind] ?? 0) + 1;
    const lines = (tally.lines[notice.kind] ??= []);
    if (lines.length < maxLines) lines.push({ subject: notice.subject, text: notice.text });
  }
  tally.told = { ...tally.told };
  for (const [kind, keys] of told) tally.told[kind] = [...keys];
  return tally;
}

/** The message about a sync's tally. */
export function composeMessage(
  tally: Tally,
  about: { syncId: string; account: string; region: string },
  maxLines: number,
): ChatMessage {
  const count = (kind: NoticeKind) => tally.counts[kind] ?? 0;
  // The first of the cluster counts names the noun: "3 clusters created, 2 upgraded, 1 deleted".
  const clusterCounts = (
    [
      ['created', 'created'],
      ['upgraded', 'upgraded'],
      ['deleted', 'deleted'],
    ] as const
  )
    .map(([kind, verb]) => [count(kind), verb] as const)
    .filter(([n]) => n > 0)
    .map(([n, verb], i) => (i === 0 ? `${plural(n, 'cluster', 'clusters')} ${verb}` : `${n} ${verb}`));
  const parts = [
    ...clusterCounts,
    ...(count('health') > 0 ? [plural(count('health'), 'health change', 'health changes')] : []),
    ...(count('scopeFailed') > 0 ? [`${plural(count('scopeFailed'), 'scope', 'scopes')} failed`] : []),
    ...(count('scopePartial') > 0
      ? [`${plural(count('scopePartial'), 'scope', 'scopes')} synced in part`]
      : []),
  ];
  const total = KINDS.reduce((n, kind) => n + count(kind), 0);
  const ordered = KINDS.flatMap((kind) => tally.lines[kind] ?? []).slice(0, maxLines);
  // Cloud strings are shown as text: a newline, a bidi override or an escape in a name shows as `\u{…}`.
  return {
    title: `cpsync: ${parts.join(', ')}`,
    lines: ordered.map((n) => {
      const subject = fitText(printable(n.subject), 100);
      return { subject, text: fitText(printable(n.text), MAX_LINE_CHARS - Array.from(subject).length) };
    }),
    more: Math.max(0, total - ordered.length),
    footer: printable(`sync ${fitText(about.syncId, 200)} · hub account ${about.account} ${about.region}`),
  };
}
