import { Document, Scalar, visit } from 'yaml';
import { describeFeatures } from '../core/domain/features.ts';
import { clusterRow } from './inventoryReport.ts';
import type { ScopeReport, SyncReport } from '../core/sync/engine.ts';
import type { ClusterProfile } from '../core/domain/model/clusterProfile.ts';
import { scopeKey } from '../core/domain/model/scope.ts';
import type { FieldChange } from '../core/domain/plan.ts';
import { cut } from '../core/domain/text.ts';
import { printable } from './terminal.ts';

/** One planned or applied change, as the CLI prints it (`--output json`). */
export interface ChangeLine {
  kind: 'create' | 'update' | 'delete';
  namespace: string;
  name: string;
  displayName: string;
  changedFields: string[];
  reason?: string;
}

export function planLines(report: ScopeReport): ChangeLine[] {
  const plan = report.plan;
  if (!plan) return [];
  const line = (
    kind: ChangeLine['kind'],
    p: ClusterProfile,
    changes: FieldChange[],
    reason?: string,
  ): ChangeLine => ({
    kind,
    namespace: p.metadata.namespace,
    name: p.metadata.name,
    displayName: p.spec?.displayName ?? '',
    changedFields: changes.map((c) => c.field),
    ...(reason ? { reason } : {}),
  });
  return [
    ...plan.creates.map((c) =>
      line('create', c.profile, [{ field: 'metadata.name', after: c.profile.metadata.name }]),
    ),
    ...plan.updates.map((u) => line('update', u.profile, u.changes)),
    ...plan.deletes.map((d) =>
      line('delete', d.current, [{ field: 'metadata.name', before: d.current.metadata.name }], d.reason),
    ),
  ];
}

function show(value: unknown): string {
  if (value === undefined) return '(none)';
  const text = typeof value === 'string' ? JSON.stringify(value) : JSON.stringify(value);
  return text.length > 120 ? `${cut(text, 117)}...` : text;
}

/** A plan as a readable diff: `+` create, `~` update (with each field's before → after), `-` delete. */
export function formatPlan(report: SyncReport): string {
  const out: string[] = [];
  for (const scope of report.scopes) {
    const plan = scope.plan;
    const counts = plan
      ? `${plan.creates.length} to create, ${plan.updates.length} to update, ${plan.deletes.length} to delete, ${plan.unchanged} unchanged`
      : 'nothing planned';
    out.push(
      `${scopeKey(scope.scope)} (${scope.outcome.kind}${scope.outcome.failure ? `: ${scope.outcome.failure.reason}` : ''}): ${counts}`,
    );
    if (!plan) continue;
    for (const c of plan.creates)
      out.push(
        `  + ${c.profile.metadata.namespace}/${c.profile.metadata.name}  ${c.profile.spec.displayName ?? ''}`,
      );
    for (const u of plan.updates) {
      out.push(
        `  ~ ${u.profile.metadata.namespace}/${u.profile.metadata.name}  ${u.profile.spec.displayName ?? ''}`,
      );
      for (const change of u.changes)
        out.push(`      ${change.field}: ${show(change.before)} → ${show(change.after)}`);
    }
    for (const d of plan.deletes)
      out.push(
        `  - ${d.current.metadata.namespace}/${d.current.metadata.name}  ${d.current.spec?.displayName ?? ''} (${d.reason})`,
      );
    for (const s of plan.skipped) out.push(`  ! ${s.namespace}/${s.name}  skipped: ${s.detail}`);
  }
  // The access grants it would make or revoke (the `accessGrants` feature).
  for (const a of report.grants?.actions ?? [])
    out.push(
      `${a.action === 'grant' ? '  grant' : '  revoke'} ${a.consumer} (${a.identity}) on ${a.providerId}`,
    );
  return `${out.map(printable).join('\n')}\n`;
}

/** The closing summary of a run. */
export function formatSummary(report: SyncReport): string {
  const totals = { created: 0, updated: 0, deleted: 0, unchanged: 0 };
  for (const s of report.scopes)
    for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += s.summary.counts[k];
  const lines = report.scopes
    .filter((s) => s.outcome.kind !== 'complete' || s.summary.error)
    .map((s) => {
      const error = s.summary.error ?? s.outcome.failure;
      const detail = error
        ? ` — ${error.reason}: ${error.message}`
        : s.outcome.missing
          ? ` — missing ${s.outcome.missing.join(', ')}`
          : '';
      return `  ${scopeKey(s.scope)}: ${s.outcome.kind}${detail}`;
    });
  const complete = report.scopes.filter((s) => s.outcome.kind === 'complete').length;
  return [
    `sync ${report.syncId}: ${report.scopes.length} scope(s), ${complete} complete; ${totals.created} created, ${totals.updated} updated, ${totals.deleted} deleted, ${totals.unchanged} unchanged; ${(report.durationMs / 1000).toFixed(1)} s`,
    `hub: ${report.hub.reads} read(s), ${report.hub.writes} write(s); events: ${report.events.published} published, ${report.events.republished} from earlier runs, ${report.events.pending} pending`,
    `features: ${describeFeatures(report.features).join(', ')}`,
    ...(report.members
      ? [
          `members: ${report.members.read} read (${report.members.unreachable} could not be), ${report.members.millis} ms of probing`,
        ]
      : []),
    ...(report.grants
      ? [
          `grants: ${report.grants.granted} granted, ${report.grants.revoked} revoked, ${report.grants.refused} refused, ${report.grants.notUsable} not usable yet`,
          ...(report.grants.projectRoles ?? []).map((change) => `  ${change}`),
          ...(report.grants.unreachedScans?.length
            ? [
                `  not scanned for cpsync's grants (the member cannot be reached, and nothing is recorded there): ${report.grants.unreachedScans.join(', ')}`,
              ]
            : []),
        ]
      : []),
    ...lines,
    ...runProblems(report),
  ]
    .map(printable)
    .join('\n');
}

/** Why events are still pending: the bus's own words for the first refusal of each kind. */
function pendingReason(report: SyncReport): string | undefined {
  const causes = new Map<string, number>();
  for (const failure of report.events.failed) {
    const cause = `${failure.code}: ${failure.message}`;
    causes.set(cause, (causes.get(cause) ?? 0) + 1);
  }
  if (causes.size === 0) return undefined;
  return [...causes]
    .slice(0, 3)
    .map(([cause, count]) => `${count} × ${cause.length > 300 ? `${cut(cause, 297)}...` : cause}`)
    .join('; ');
}

/** What went wrong outside the scopes: the bus, the outbox, intents waiting, malformed objects, a stop. */
function runProblems(report: SyncReport): string[] {
  const lines: string[] = [];
  const refused = pendingReason(report);
  if (refused) lines.push(`  the bus refused events (they stay in the outbox for the next run): ${refused}`);
  for (const problem of report.problems) lines.push(`  ${problem}`);
  if (report.intents.waiting > 0)
    lines.push(
      `  ${report.intents.waiting} intent(s) of unfinished changes wait in the outbox; settled by the first run once the run that wrote them is over (at the latest from ${report.intents.settledFrom ?? 'now'})`,
    );
  for (const record of report.quarantined)
    lines.push(`  unreadable outbox record moved aside: ${record.path} (${record.reason})`);
  for (const object of report.malformed)
    lines.push(
      `  malformed object in the hub, left untouched: ${object.namespace}/${object.name} (${object.reason})`,
    );
  const withoutCa = report.withoutCertificateAuthority;
  if (withoutCa.length > 0)
    lines.push(
      `  ${withoutCa.length} profile(s) carry no CA data (consumers then use their own trust): ${withoutCa
        .slice(0, 5)
        .map((p) => `${p.namespace}/${p.name} (${p.reason})`)
        .join(', ')}${withoutCa.length > 5 ? ', …' : ''}`,
    );
  const orphans = report.orphans ?? [];
  if (orphans.length > 0)
    lines.push(
      `  ${orphans.reduce((n, o) => n + o.names.length, 0)} profile(s) of ${orphans.length} scope(s) the configuration no longer covers, kept: ${orphans
        .slice(0, 5)
        .map((o) => `${scopeKey(o.scope)} (${o.names.length})`)
        .join(
          ', ',
        )}${orphans.length > 5 ? ', …' : ''} — \`cpsync list --orphans\` lists them, \`cpsync prune --orphans --yes\` deletes them`,
    );
  if (report.interrupted)
    lines.push(
      `  stopped by ${report.interrupted.reason}: ${report.interrupted.notStarted} scope(s) not started; what was applied is announced`,
    );
  return lines;
}

/** A profile as one row of `cpsync list`: the report's row, without what only the report shows. */
export function listRow(profile: ClusterProfile) {
  const { name, namespace, displayName, provider, location, version, healthy, nodes } = clusterRow(profile);
  return { name, namespace, displayName, provider, location, version, healthy, nodes };
}

export function formatTable(
  rows: Array<Record<string, string>>,
  columns: Array<[key: string, title: string]>,
): string {
  // Cells are cloud strings: shown, never acted on by the terminal.
  rows = rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, printable(v)])));
  const widths = columns.map(([key, title]) =>
    Math.max(title.length, ...rows.map((r) => (r[key] ?? '').length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return `${[line(columns.map(([, t]) => t)), ...rows.map((r) => line(columns.map(([k]) => r[k] ?? '')))].join('\n')}\n`;
}

/** Strings YAML is asked to write double-quoted, with escapes: those holding a character that acts. */
const ACTING = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

/** A character YAML would leave raw in a double-quoted string, as its `\u`/`\U` escape. */
const yamlEscape = (c: string) => {
  const code = c.codePointAt(0)!;
  return code > 0xffff
    ? `\\U${code.toString(16).padStart(8, '0')}`
    : `\\u${code.toString(16).padStart(4, '0')}`;
};

/**
 * `value` as YAML in which no character acts: a string holding a control, format character, separator or lone
 * surrogate is written double-quoted, every such character as an escape (newlines too). It parses back to
 * the same value.
 */
export function formatYaml(value: unknown): string {
  const document = new Document(value);
  visit(document, {
    Scalar(_, node) {
      if (typeof node.value === 'string' && ACTING.test(node.value)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  // The double-quoted strings are JSON's, whose C0 escapes YAML keeps; what JSON leaves raw is escaped here.
  return document
    .toString({ doubleQuotedMinMultiLineLength: Infinity })
    .replace(/[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu, yamlEscape);
}
