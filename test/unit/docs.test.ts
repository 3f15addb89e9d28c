/**
 * The docs tell the truth: every relative link (and its `#heading`) resolves, every configuration snippet
 * marked ```yaml cpsync-config passes `cpsync validate-config`, every `cpsync …` line of a ```sh block and every
 * `cpsync …` code span of the prose is one the command's own parser takes, every configuration key a code span of
 * the prose names is one the schema has, every `npm run <script>` names a script there is, and the configuration
 * reference is what `npm run docs` makes of the schema today.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { CommanderError, type Command } from 'commander';
import GithubSlugger from 'github-slugger';
import { Lexer, marked, type Token, type Tokens } from 'marked';
import { parse as parseShell } from 'shell-quote';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { configSchema } from '../../adapters/compose/config.ts';
import { FEATURE_NAMES } from '../../core/domain/features.ts';
import { loadConfig } from '../../cli/loadConfig.ts';
import { cpsyncProgram } from '../../cli/program.ts';
import { CLI_PAGE, cliReference } from '../../infra/cliReference.ts';
import { CONFIG_SOURCE, configReference, REFERENCE_PAGE } from '../../infra/configReference.ts';
import { EVENT_SCHEMAS, eventsReference, EVENTS_PAGE } from '../../infra/eventsReference.ts';
import { temporaryDirectory } from '../support/tmp.ts';

const ROOT = resolve(import.meta.dirname, '../..');
/** The info string that marks a configuration snippet (a whole configuration, or a fragment of one). */
const CONFIG_SNIPPET = 'cpsync-config';
/** What a fragment is merged over: the smallest configuration a reader starts from. */
const BASE_CONFIG = { hub: { directory: './inventory' }, bus: { stdout: true } };
/** Written by `npm run bench` while others work on it: linked to, not checked here. */
const NOT_CHECKED = new Set(['BENCHMARKS.md']);

function markdownFiles(directory: string): string[] {
  return readdirSync(join(ROOT, directory), { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return markdownFiles(path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The pages: the docs, the README, the security policy, the test and versioning guides. */
const PAGES = [
  'README.md',
  'SECURITY.md',
  'test/README.md',
  'events/VERSIONING.md',
  ...markdownFiles('docs'),
].filter((page) => existsSync(join(ROOT, page)) && !NOT_CHECKED.has(page));

interface CodeBlock {
  lang: string;
  text: string;
  /** The line of the block's first line of code (1-based). */
  line: number;
}

/** An inline code span (`…` in the prose, outside code blocks). */
interface CodeSpan {
  text: string;
  /** The line the span starts on (1-based). */
  line: number;
}

interface Page {
  headings: Set<string>;
  links: string[];
  code: CodeBlock[];
  spans: CodeSpan[];
}

/** A heading's text as GitHub renders it (code spans and links by their text; HTML left out). */
function plainText(tokens: Token[] | undefined): string {
  return (tokens ?? [])
    .map((token) => {
      if (token.type === 'html') return '';
      if ('tokens' in token && token.tokens && token.type !== 'codespan') return plainText(token.tokens);
      return 'text' in token ? String(token.text) : '';
    })
    .join('');
}

const pages = new Map<string, Page>();
function page(path: string): Page {
  const known = pages.get(path);
  if (known) return known;
  const source = readFileSync(join(ROOT, path), 'utf8');
  const slugger = new GithubSlugger();
  const result: Page = { headings: new Set(), links: [], code: [], spans: [] };
  /** Where in the source the last block or span found ends: the tokens come in the page's order. */
  let cursor = 0;
  const lineAt = (at: number): number => source.slice(0, at).split('\n').length;
  marked.walkTokens(Lexer.lex(source), (token) => {
    if (token.type === 'heading')
      result.headings.add(slugger.slug(plainText((token as Tokens.Heading).tokens)));
    else if (token.type === 'link') result.links.push((token as Tokens.Link).href);
    else if (token.type === 'code' && (token as Tokens.Code).codeBlockStyle !== 'indented') {
      const code = token as Tokens.Code;
      const fence = code.raw.trimStart().split('\n')[0]!;
      const at = source.indexOf(fence, cursor);
      cursor = at + fence.length;
      result.code.push({
        lang: code.lang ?? '',
        text: code.text,
        line: lineAt(at) + 1,
      });
    } else if (token.type === 'codespan') {
      const { raw, text } = token as Tokens.Codespan;
      // In a table cell the token's raw has `\|` unescaped; the source has it as written.
      const at = [raw, raw.replaceAll('|', '\\|')]
        .map((written) => source.indexOf(written, cursor))
        .find((found) => found >= 0);
      if (at !== undefined) cursor = at + 1;
      result.spans.push({ text, line: lineAt(at ?? cursor) });
    }
  });
  pages.set(path, result);
  return result;
}

/** What is wrong with a relative link from `from`, or undefined when it resolves (anchor included). */
function brokenLink(from: string, href: string): string | undefined {
  const [target = '', anchor] = href.split('#');
  const path =
    target === '' ? from : relative(ROOT, resolve(ROOT, dirname(from), decodeURIComponent(target)));
  if (!existsSync(join(ROOT, path))) return `${path} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!path.endsWith('.md') || statSync(join(ROOT, path)).isDirectory()) return `${path} has no headings`;
  return page(path).headings.has(anchor) ? undefined : `${path} has no heading #${anchor}`;
}

/** Deep merge of a fragment over a base: objects key by key, anything else replaced. */
function merged(base: unknown, fragment: unknown): unknown {
  if (typeof base !== 'object' || base === null || Array.isArray(base)) return fragment;
  if (typeof fragment !== 'object' || fragment === null || Array.isArray(fragment)) return fragment;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [key, value] of Object.entries(fragment)) out[key] = merged(out[key], value);
  return out;
}

/**
 * What a placeholder of a code span (`<role ARN>`, a `…` standing for a value) is given to the parser as: a value
 * holding it stands for any the option or argument takes.
 */
const PLACEHOLDER = '‹placeholder›';

/**
 * The `cpsync` program with every command's action a no-op: parsing a line checks it and runs nothing. Each
 * option's and argument's own check (its choices, its parser) still judges every value but a placeholder.
 */
function parsingProgram(): { program: Command; output: string[] } {
  const output: string[] = [];
  const sink = {
    write: (chunk: string) => {
      output.push(String(chunk));
      return true;
    },
  } as unknown as NodeJS.WritableStream;
  const program = cpsyncProgram({ stdout: sink, stderr: sink }, () => {});
  const silence = (command: Command): void => {
    command.action(() => {});
    for (const taking of [...command.options, ...command.registeredArguments]) {
      const parseArg = taking.parseArg;
      if (parseArg)
        taking.parseArg = <T>(value: string, previous: T): T =>
          value.includes(PLACEHOLDER) ? previous : parseArg(value, previous);
    }
    command.commands.forEach(silence);
  };
  program.commands.forEach(silence);
  return { program, output };
}

/** Why the `cpsync` command refuses a command line (its own message), or undefined when it takes it. */
async function refusedCommand(args: string[]): Promise<string | undefined> {
  const { program, output } = parsingProgram();
  try {
    await program.parseAsync(args, { from: 'user' });
    return undefined;
  } catch (error) {
    if (error instanceof CommanderError && error.exitCode === 0) return undefined;
    return output.join('').split('\n')[0]!.trim() || String(error);
  }
}

/** Whether the words are a command's name alone (`consumers`, `hub install`), as prose names a command. */
function namesCommand(args: string[]): boolean {
  let command: Command | undefined = parsingProgram().program;
  for (const word of args)
    command = command?.commands.find((sub) => sub.name() === word || sub.aliases().includes(word));
  return command !== undefined && args.length > 0;
}

/** The simple commands of a shell line: words, split at `|`, `&&`, `;` and redirections, comments gone. */
function simpleCommands(line: string): string[][] {
  const commands: string[][] = [[]];
  let redirected = false;
  for (const entry of parseShell(line, (name) => `$${name}`)) {
    if (typeof entry === 'string') {
      if (redirected) redirected = false;
      else commands.at(-1)!.push(entry);
    } else if ('comment' in entry) break;
    else if ('op' in entry) {
      if (/^[<>]/.test(entry.op)) redirected = true;
      else commands.push([]);
    }
  }
  return commands.filter((words) => words.length > 0);
}

/** The lines of a shell block, with the line each starts on (continuations joined). */
function shellLines(block: CodeBlock): Array<{ text: string; line: number }> {
  const lines: Array<{ text: string; line: number }> = [];
  let pending: { text: string; line: number } | undefined;
  block.text.split('\n').forEach((raw, index) => {
    const text = raw.replace(/^\$ /, '');
    if (pending) pending.text += ` ${text}`;
    else pending = { text, line: block.line + index };
    if (/\\$/.test(text)) pending.text = pending.text.replace(/\\$/, '');
    else {
      lines.push(pending);
      pending = undefined;
    }
  });
  if (pending) lines.push(pending);
  return lines;
}

/** The words after `cpsync` of a simple command that runs it (`cpsync …` or `npx cpsync …`), else undefined. */
function cpsyncArgs(words: string[]): string[] | undefined {
  if (words[0] === 'cpsync') return words.slice(1);
  if (words[0] === 'npx' && words[1] === 'cpsync') return words.slice(2);
  return undefined;
}

/** Code spans that begin with `cpsync ` and are not command lines: names cpsync writes. */
const NOT_COMMAND_SPANS = new Set(['cpsync consumer <name>']);
/** Generated from the command's own help and the event schemas, and checked against them instead. */
const GENERATED = 'docs/reference/';

/**
 * The command lines of a code span of the prose that shows `cpsync …` or `npx cpsync …`, as the words after
 * `cpsync`; none for any other span. A `<placeholder>` is one word, a `…` is one too, but a closing `…` (the rest
 * of the options) is left out, and a span that says nothing after `cpsync` but `…` is no command line.
 */
function spanCommands(text: string): string[][] {
  if (!/^(npx )?cpsync /.test(text) || NOT_COMMAND_SPANS.has(text)) return [];
  const words = text
    .replace(/<[^<>]*>/g, PLACEHOLDER)
    .replace(/\s*…$/, '')
    .replace(/(^|\s)…(?=\s|$)/g, `$1${PLACEHOLDER}`);
  return simpleCommands(words).flatMap((command) => {
    const args = cpsyncArgs(command);
    return args && args.length > 0 ? [args] : [];
  });
}

/** A JSON Schema as zod writes it, as far as the walk below reads it. */
interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  additionalProperties?: SchemaNode | boolean;
}

/** Every key path of the configuration (`providers.eks.roleName`; a list's items by the list's own path). */
function configPaths(): Set<string> {
  const paths = new Set<string>();
  const walk = (node: SchemaNode | boolean | undefined, at: string[]) => {
    if (!node || typeof node !== 'object') return;
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      paths.add([...at, key].join('.'));
      walk(child, [...at, key]);
    }
    walk(node.items, at);
    for (const option of [...(node.anyOf ?? []), ...(node.oneOf ?? [])]) walk(option, at);
    walk(node.additionalProperties, at);
  };
  walk(z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as SchemaNode, []);
  for (const feature of FEATURE_NAMES) paths.add(`features.${feature}`);
  return paths;
}

const CONFIG_PATHS = configPaths();
const TOP_LEVEL_KEYS = new Set(Object.keys(configSchema.shape));
const FEATURES = new Set<string>(FEATURE_NAMES);
/** A file's name (`features.json`), not a key path. */
const FILE_NAME = /\.(json|ya?ml|md|ts|mjs|js|html|svg|txt)$/;

/**
 * Why a code span of the prose that names configuration names it wrongly, or undefined: a key path
 * (`providers.eks.roleName`, with or without `: value`) the schema must have, and a feature turned on or off by
 * its name alone (`accessGrants: off`), which is set under `features:`.
 */
function wrongConfigSpan(text: string): string | undefined {
  const path = /^([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)+)(?::.*)?$/s.exec(text)?.[1];
  if (path && TOP_LEVEL_KEYS.has(path.split('.')[0]!) && !FILE_NAME.test(path) && !CONFIG_PATHS.has(path))
    return `the configuration has no key ${path}`;
  const key = /^([A-Za-z][A-Za-z0-9]*):\s*(on|off|true|false)$/.exec(text)?.[1];
  if (key && FEATURES.has(key) && !TOP_LEVEL_KEYS.has(key))
    return `${key} is a feature: it is set under features: (features: { ${key}: … })`;
  return undefined;
}

const SCRIPTS = Object.keys(
  (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
    .scripts,
);
/** npm's own commands the docs may show besides `npm run <script>`. */
const NPM_COMMANDS = new Set(['ci', 'install', 'test']);

describe('the docs', () => {
  it('are found: the index, a page for each task, the configuration reference', () => {
    for (const path of ['docs/README.md', 'docs/getting-started.md', 'docs/deploying.md', REFERENCE_PAGE])
      assert.ok(PAGES.includes(path), `${path} is there`);
  });

  it('have a README that is a front door: under 200 lines, linking to every page', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    assert.ok(lines < 200, `README.md has ${lines} lines; what a reader comes to do goes in a page of docs/`);
    const linked = new Set(page('README.md').links.map((href) => href.split('#')[0]));
    assert.deepEqual(
      markdownFiles('docs').filter((path) => !linked.has(path)),
      [],
      'README.md links to every page of docs/',
    );
  });

  it('link only to files and headings that exist', () => {
    const broken = PAGES.flatMap((from) =>
      page(from)
        .links.filter((href) => !/^[a-z][a-z0-9+.-]*:/i.test(href))
        .flatMap((href) => {
          const why = brokenLink(from, href);
          return why ? [`${from}: (${href}): ${why}`] : [];
        }),
    );
    assert.deepEqual(broken, [], 'every relative link resolves');
  });

  it('show configuration snippets that cpsync validate-config accepts', () => {
    const directory = temporaryDirectory('cpsync-docs-');
    const configKeys = new Set(Object.keys(configSchema.shape));
    const refused: string[] = [];
    let checked = 0;
    for (const from of PAGES)
      for (const block of page(from).code) {
        const [lang, ...info] = block.lang.split(/\s+/);
        if (lang !== 'yaml' && lang !== 'yml') continue;
        if (!info.includes(CONFIG_SNIPPET)) {
          // A block that is all configuration keys must say so, to be checked.
          let document: unknown;
          try {
            document = parseYaml(block.text);
          } catch {
            continue;
          }
          if (document && typeof document === 'object' && !Array.isArray(document)) {
            const keys = Object.keys(document);
            if (keys.length > 0 && keys.every((key) => configKeys.has(key)))
              refused.push(
                `${from}:${block.line}: a configuration snippet not marked \`yaml ${CONFIG_SNIPPET}\``,
              );
          }
          continue;
        }
        checked += 1;
        const file = join(directory, `snippet-${checked}.yaml`);
        try {
          writeFileSync(file, JSON.stringify(merged(BASE_CONFIG, parseYaml(block.text) ?? {})));
          loadConfig(file);
        } catch (error) {
          refused.push(`${from}:${block.line}: ${(error as Error).message.replace(file, 'the snippet')}`);
        }
      }
    assert.deepEqual(refused, [], 'every configuration snippet is valid');
    assert.ok(checked >= 5, `configuration snippets were found and checked (${checked})`);
  });

  it('show cpsync command lines the cpsync command parses, and npm scripts there are', async () => {
    const refused: string[] = [];
    let checked = 0;
    for (const from of PAGES)
      for (const block of page(from).code) {
        if (!['sh', 'bash', 'shell', 'console'].includes(block.lang.split(/\s+/)[0]!)) continue;
        for (const { text, line } of shellLines(block))
          for (const words of simpleCommands(text)) {
            const args = cpsyncArgs(words);
            if (args) {
              checked += 1;
              const why = await refusedCommand(args);
              if (why) refused.push(`${from}:${line}: cpsync ${args.join(' ')}: ${why}`);
            } else if (words[0] === 'npm') {
              const [command, script] = [words[1] ?? '', words[2] ?? ''];
              if (command === 'run' && !SCRIPTS.includes(script))
                refused.push(`${from}:${line}: npm run ${script}: package.json has no such script`);
              else if (command !== 'run' && !NPM_COMMANDS.has(command))
                refused.push(`${from}:${line}: npm ${command}: not a command the docs expect`);
            }
          }
      }
    assert.deepEqual(refused, [], 'every command line shown is one cpsync and npm take');
    assert.ok(checked >= 20, `cpsync command lines were found and checked (${checked})`);
  });

  it('name, in the prose, cpsync command lines the cpsync command parses', async () => {
    const refused: string[] = [];
    let checked = 0;
    for (const from of PAGES.filter((path) => !path.startsWith(GENERATED)))
      for (const { text, line } of page(from).spans)
        for (const args of spanCommands(text)) {
          checked += 1;
          // A command named alone (`cpsync consumers` prints …) needs only to exist; a line, to be taken.
          const why = namesCommand(args) ? undefined : await refusedCommand(args);
          if (why) refused.push(`${from}:${line}: \`${text}\`: ${why}`);
        }
    assert.deepEqual(refused, [], 'every cpsync command line named in the prose is one cpsync takes');
    assert.ok(checked >= 50, `cpsync command lines of the prose were found and checked (${checked})`);
  });

  it('name, in the prose, configuration keys the schema has, where it has them', () => {
    const refused: string[] = [];
    let checked = 0;
    for (const from of PAGES.filter((path) => !path.startsWith(GENERATED)))
      for (const { text, line } of page(from).spans) {
        if (/^[A-Za-z][A-Za-z0-9]*[.:]/.test(text)) checked += 1;
        const why = wrongConfigSpan(text);
        if (why) refused.push(`${from}:${line}: \`${text}\`: ${why}`);
      }
    assert.deepEqual(refused, [], 'every configuration key named in the prose is one the configuration has');
    assert.ok(checked >= 30, `configuration keys of the prose were found and checked (${checked})`);
  });

  it('are checked by checks that refuse what is wrong', async () => {
    assert.match((await refusedCommand(['synk'])) ?? '', /unknown command 'synk'/);
    assert.match((await refusedCommand(['sync', '--dryrun'])) ?? '', /unknown option '--dryrun'/);
    assert.match((await refusedCommand(['list', '--output', 'xml'])) ?? '', /xml/);
    assert.equal(
      await refusedCommand(['sync', '--scope', 'eks/111122223333/us-east-1', '--dry-run']),
      undefined,
    );
    assert.deepEqual(simpleCommands('npx cpsync list -o json | jq . > out.json # the list'), [
      ['npx', 'cpsync', 'list', '-o', 'json'],
      ['jq', '.'],
    ]);
    assert.deepEqual(spanCommands('cpsync consumers <kind> --subject … --part rbac'), [
      ['consumers', PLACEHOLDER, '--subject', PLACEHOLDER, '--part', 'rbac'],
    ]);
    assert.deepEqual(spanCommands('npx cpsync hub install --eks-role <role ARN> …'), [
      ['hub', 'install', '--eks-role', PLACEHOLDER],
    ]);
    assert.deepEqual(spanCommands('cpsync sync | head -c 200'), [['sync']]);
    for (const fragment of [
      'cpsync …',
      'cpsync.yaml',
      'cpsync-install',
      'cpsync.io/tag-',
      'cpsync consumer <name>',
    ])
      assert.deepEqual(spanCommands(fragment), [], `${fragment} is no command line`);
    assert.ok(namesCommand(['consumers']) && namesCommand(['hub', 'install']));
    assert.ok(!namesCommand(['synk']) && !namesCommand(['consumers', 'kueue']) && !namesCommand([]));
    assert.equal(
      await refusedCommand(spanCommands('cpsync consumers <kind> --subject … --part rbac')[0]!),
      undefined,
    );
    assert.match(
      (await refusedCommand(spanCommands('cpsync consumers <kind> --subject … --part nothing')[0]!)) ?? '',
      /argument 'nothing' is invalid/,
    );
    assert.match(
      (await refusedCommand(['consumers', 'kueue', '--part', 'nothing'])) ?? '',
      /'nothing' is invalid/,
    );
    assert.match(
      brokenLink('docs/README.md', '../README.md#no-such-heading') ?? '',
      /no heading #no-such-heading/,
    );
    assert.match(brokenLink('docs/README.md', 'missing.md') ?? '', /does not exist/);
    assert.match(
      wrongConfigSpan('providers.eks.clusterMaxAge') ?? '',
      /no key providers\.eks\.clusterMaxAge/,
    );
    assert.match(wrongConfigSpan('inventory.lables.fromTags: [team]') ?? '', /no key inventory\.lables/);
    assert.match(wrongConfigSpan('accessGrants: off') ?? '', /set under features:/);
    for (const named of [
      'providers.eks.clusterMaxAgeMinutes',
      'providers.aks.listing: resourceGraph',
      'inventory.projections.namespaces',
      'features.accessGrants',
      'features: { accessGrants: off }',
      'features.json',
      'status.conditions: 7',
      'provideClusterInfo: true',
      'accessGrants: { manager, consumerRoleArns: [...] }',
    ])
      assert.equal(wrongConfigSpan(named), undefined, `${named} is named rightly`);
  });

  it('hold the reference pages as `npm run docs` makes them from the schemas', () => {
    const stale = [
      [REFERENCE_PAGE, configReference(readFileSync(join(ROOT, CONFIG_SOURCE), 'utf8'))],
      [EVENTS_PAGE, eventsReference(join(ROOT, EVENT_SCHEMAS))],
      [CLI_PAGE, cliReference()],
    ].filter(([page, text]) => readFileSync(join(ROOT, page!), 'utf8') !== text);
    assert.deepEqual(
      stale.map(([page]) => page),
      [],
      'a reference page differs from the schema it is generated from: run `npm run docs` and commit the page',
    );
  });
});
