/**
 * A name scheme weak enough to collide, for the tests that prove no collision can take a name: a newcomer's
 * first name is its display name alone (`cpsync-eks-payments`), so two clusters of the same display name in
 * two regions, accounts or projects want the same name. The names it falls back to are the product's own.
 */
import { PROFILE_NAMES, slugify, type NameScheme } from '../../core/domain/naming.ts';

export const WEAK_NAMES: NameScheme = {
  candidates: (manager, cluster) => [
    `${manager}-${cluster.provider}-${slugify(cluster.name).slice(0, 40) || 'unnamed'}`,
    ...PROFILE_NAMES.candidates(manager, cluster),
  ],
  legacy: (manager, cluster) => PROFILE_NAMES.legacy(manager, cluster),
};

/** The name two clusters of display name `name` both want under WEAK_NAMES. */
export const weakName = (provider: string, name: string, manager = 'cpsync') =>
  `${manager}-${provider}-${slugify(name)}`;
