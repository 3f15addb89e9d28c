/**
 * A message as each chat takes it: a Slack incoming-webhook message or a Teams Adaptive Card, cloud
 * strings only where the chat shows them as they are, within the chat's size limit.
 */
import type { ChatMessage } from './message.ts';
import type { ChatFormat } from './settings.ts';

/** Limits of the chat services: Slack's section text; a Teams message (28 KB) and a Slack one, in bytes. */
const SLACK_SECTION_CHARS = 3000;
const TEAMS_MAX_BYTES = 27 * 1024;
const SLACK_MAX_BYTES = 36 * 1024;

/** Text as Slack's mrkdwn takes it: `&`, `<` and `>` escaped, so nothing reads as a link or mention. */
const slackText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Lines of `lines` grouped so that no group holds more than `max` characters. */
function groups<T>(lines: readonly T[], size: (line: T) => number, max: number): T[][] {
  const grouped: T[][] = [];
  let used = 0;
  for (const line of lines) {
    const last = grouped.at(-1);
    if (last && used + size(line) <= max) {
      last.push(line);
      used += size(line);
    } else {
      grouped.push([line]);
      used = size(line);
    }
  }
  return grouped;
}

/**
 * A Slack incoming-webhook message. Cloud strings go only into rich-text `text` elements and
 * `plain_text` objects, which Slack shows as they are: no mrkdwn formatting, link, mention
 * (`<!channel>`) or emoji code in a cluster's name or a cloud's message acts. `text` (the notification's
 * and the fallback's) is the title, made of counts only.
 */
function slackPayload(message: ChatMessage): { text: string; blocks: object[] } {
  const item = (line: ChatMessage['lines'][number]) => ({
    type: 'rich_text_section',
    elements: [
      { type: 'text', text: line.subject, style: { bold: true } },
      { type: 'text', text: ` ${line.text}` },
    ],
  });
  const lists = groups(message.lines, (l) => l.subject.length + l.text.length + 1, SLACK_SECTION_CHARS);
  return {
    text: slackText(message.title),
    blocks: [
      { type: 'section', text: { type: 'plain_text', text: message.title, emoji: false } },
      ...lists.map((lines) => ({
        type: 'rich_text',
        elements: [{ type: 'rich_text_list', style: 'bullet', elements: lines.map(item) }],
      })),
      ...(message.more > 0
        ? [{ type: 'section', text: { type: 'plain_text', text: `…and ${message.more} more`, emoji: false } }]
        : []),
      { type: 'context', elements: [{ type: 'plain_text', text: message.footer, emoji: false }] },
    ],
  };
}

/**
 * A Teams message (Workflows or incoming webhook): one Adaptive Card. Cloud strings go only into the
 * `TextRun`s of RichTextBlocks, which Teams does not read as markdown: no link, emphasis or list in a
 * cluster's name acts. The title and "and N more" (counts only) are TextBlocks.
 */
function teamsPayload(message: ChatMessage): object {
  const body = [
    { type: 'TextBlock', text: message.title, weight: 'Bolder', size: 'Medium', wrap: true },
    ...message.lines.map((l) => ({
      type: 'RichTextBlock',
      inlines: [
        { type: 'TextRun', text: l.subject, weight: 'Bolder' },
        { type: 'TextRun', text: ` ${l.text}` },
      ],
      spacing: 'Small',
    })),
    ...(message.more > 0
      ? [{ type: 'TextBlock', text: `…and ${message.more} more`, wrap: true, spacing: 'Small' }]
      : []),
    {
      type: 'RichTextBlock',
      inlines: [{ type: 'TextRun', text: message.footer, isSubtle: true, size: 'Small' }],
    },
  ];
  return {
    type: 'message',
    attachments: [
      {
        contentType: 'application/vnd.microsoft.card.adaptive',
        contentUrl: null,
        content: {
          type: 'AdaptiveCard',
          version: '1.4',
          $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
          body,
          msteams: { width: 'Full' },
        },
      },
    ],
  };
}

/**
 * The payload of `message` in `format`, within the chat's size limit in bytes (UTF-8, as posted): lines
 * are moved from the end into "and N more" until it fits (a card of 50 lines of CJK names is over
 * 40 KB; Teams refuses more than 28 KB).
 */
export function chatPayload(message: ChatMessage, format: ChatFormat): object {
  const render = format === 'teams' ? teamsPayload : slackPayload;
  const limit = format === 'teams' ? TEAMS_MAX_BYTES : SLACK_MAX_BYTES;
  let fitted = message;
  for (;;) {
    const payload = render(fitted);
    if (Buffer.byteLength(JSON.stringify(payload), 'utf8') <= limit || fitted.lines.length === 0)
      return payload;
    fitted = { ...fitted, lines: fitted.lines.slice(0, -1), more: fitted.more + 1 };
  }
}
