/**
 * core/domain/naming.ts as earlier versions named profiles (40 bits of the id hash, nothing to fall back
 * to): a command built with it writes the inventory an upgrade starts from (see cliWithNames in ../cli.ts).
 */
import { PROFILE_NAMES as CURRENT, type NameScheme } from '../../../core/domain/naming.ts';

export * from '../../../core/domain/naming.ts';
export const PROFILE_NAMES: NameScheme = {
  candidates: (manager, cluster) => CURRENT.legacy(manager, cluster),
  legacy: () => [],
};
