/** core/domain/naming.ts with a weak name scheme in place of the product's (see cliWithNames in ../cli.ts). */
export * from '../../../core/domain/naming.ts';
export { WEAK_NAMES as PROFILE_NAMES } from '../weakNames.ts';
