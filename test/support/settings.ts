/**
 * Inventory options and run settings for tests, made the one way production makes them: a
 * configuration document through the configuration schema (its defaults are the only defaults).
 */
import { parseConfig } from '../../adapters/compose/config.ts';
import { engineSettings, type EngineSettings } from '../../adapters/compose/settings.ts';
import type { InventoryOptions } from '../../core/domain/options.ts';

/** The settings a run takes from `document` (a configuration, validated). */
function settingsFrom(document: Record<string, unknown> = {}): EngineSettings {
  return engineSettings(parseConfig(document, 'test configuration'));
}

/**
 * Inventory options from `overrides` written as the configuration writes them (`manager`, `features`,
 * `inventory.*`).
 */
export function inventoryOptions(
  overrides: Omit<Partial<InventoryOptions>, 'features'> & {
    features?: Partial<InventoryOptions['features']>;
  } = {},
): InventoryOptions {
  const { manager, features, consumers, localClouds, ...inventory } = overrides;
  const options = settingsFrom({
    ...(manager !== undefined ? { manager } : {}),
    ...(features !== undefined ? { features } : {}),
    inventory,
  }).options;
  // Consumers, and the clouds reached on this machine, as the core takes them (the configuration's form is
  // checked in config.test.ts).
  return {
    ...options,
    ...(consumers === undefined ? {} : { consumers }),
    ...(localClouds === undefined ? {} : { localClouds }),
  };
}

/** The settings of a run with the configuration's defaults and `options`. */
export function runSettings(options: InventoryOptions = inventoryOptions()): EngineSettings {
  return { ...settingsFrom(), options };
}
