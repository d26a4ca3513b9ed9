import {
  validateScenario,
  validateVehicleConfig,
  type Scenario,
  type ScenarioSummary,
  type VehicleConfig,
} from '../../model/catalog.js';
import type { CatalogPort } from '../../model/store-port.js';

/*
 * The catalogs' rules, once for every backend: what goes in is checked by the model before the
 * backend stores it (a backend keeps only the I/O: its table or SODA.Sim's collections).
 */

function validated<Item, Summary, Key>(
  port: CatalogPort<Item, Summary, Key>,
  validate: (item: Item) => Item,
): CatalogPort<Item, Summary, Key> {
  return {
    put: async (item) => port.put(validate(item)),
    get: (key) => port.get(key),
    list: () => port.list(),
    delete: (key) => port.delete(key),
  };
}

export const scenarioCatalog = (
  io: CatalogPort<Scenario, ScenarioSummary, bigint>,
): CatalogPort<Scenario, ScenarioSummary, bigint> => validated(io, validateScenario);

export const vehicleCatalog = (
  io: CatalogPort<VehicleConfig, VehicleConfig, string>,
): CatalogPort<VehicleConfig, VehicleConfig, string> => validated(io, validateVehicleConfig);
