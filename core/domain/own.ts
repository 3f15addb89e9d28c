/**
 * `record`'s own entry under `key`, or undefined: never what the object prototype holds. For every lookup of a
 * name that comes from configuration, a cloud or the hub (a namespace named `constructor`, a tag rule on
 * `__proto__`, a status `toString`).
 */
export function own<V>(record: Readonly<Partial<Record<string, V>>> | undefined, key: string): V | undefined {
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}
