/**
 * flotta, the one package to install: the `flotta` command (its `bin`) and the fleet as Promises.
 *
 * ```js
 * import { createFleet } from "flotta"
 * const fleet = createFleet()
 * await fleet.spawn("scout", { cwd: "." })
 * console.log(await fleet.ask("scout", "What does this repository do?"))
 * await fleet.shutdown()
 * ```
 *
 * The Effect API is in the `@flotta/*` packages this one installs (`@flotta/core/Flotta`, `@flotta/core/Testing`).
 */
export { defineConfig } from "@flotta/cli/ConfigFile"
export type { FlottaConfig } from "@flotta/cli/ConfigFile"
export { createFleet, fromLayer } from "@flotta/core/Client"
export type {
  CreateFleetOptions,
  Extension,
  Extensions,
  Fleet,
  Runner,
  SubscribeCallbacks,
  Unsubscribe
} from "@flotta/core/Client"
export * from "@flotta/core/Errors"
/** `createFleet({ extensions: { scheduler: scheduler(config) } })` adds `fleet.scheduler` (working hours, routines). */
export { extension as scheduler } from "@flotta/scheduler/Client"
export type { SchedulerPromises } from "@flotta/scheduler/Client"
/** The Promise facade for a node of a cluster: `createClusterFleet({ cluster: { store, host, listen } })`. */
export { createFleet as createClusterFleet } from "@flotta/cluster/Cluster"
