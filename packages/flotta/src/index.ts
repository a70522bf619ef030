/**
 * flotta, the one package to install: the `flotta` command (its `bin`) and the fleet as Promises.
 *
 * ```js
 * import { createFleet } from "flotta"
 * const fleet = createFleet({ simulate: true })   // the real claude CLI on the built-in scripted model
 * await fleet.spawn("scout", { cwd: "." })
 * console.log(await fleet.ask("scout", "What does this repository do?"))
 * await fleet.shutdown()
 * ```
 *
 * The Effect API is in the `@flotta/*` packages (`@flotta/core/Flotta`, `@flotta/core/Testing`), to install
 * beside `effect`.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { simulatedEnv } from "@flotta/cli/Composition"
import * as Client from "@flotta/core/Client"
import * as Flotta from "@flotta/core/Flotta"
import { Effect, Layer } from "effect"

export { defineConfig } from "@flotta/cli/ConfigFile"
export type { FlottaConfig } from "@flotta/cli/ConfigFile"
export { fromLayer } from "@flotta/core/Client"
export type { Extension, Extensions, Faces, Fleet, Runner, SubscribeCallbacks, Unsubscribe } from "@flotta/core/Client"
export * from "@flotta/core/Errors"
/** `createFleet({ extensions: { scheduler: scheduler(config) } })` adds `fleet.scheduler` (working hours, routines). */
export { extension as scheduler } from "@flotta/scheduler/Client"
export type { SchedulerPromises } from "@flotta/scheduler/Client"
/** The Promise facade for a node of a cluster: `createClusterFleet({ cluster: { store, host, listen } })`. */
export { createFleet as createClusterFleet } from "@flotta/cluster/Cluster"

export interface CreateFleetOptions<X extends Client.Extensions = Record<never, never>>
  extends Client.CreateFleetOptions<X>
{
  /**
   * Run the real `claude` CLI against flotta's built-in scripted model on 127.0.0.1 (it echoes what it is asked,
   * and acts on the words of docs/guides/simulator.md): no account, no network, no spend. The same model as
   * `flotta run --simulate`; it lives as long as the fleet.
   */
  readonly simulate?: boolean
}

/**
 * The fleet in memory over the real claude CLI (or `options.executable`), with any extensions; with `simulate`,
 * over the built-in scripted model.
 */
export const createFleet = <X extends Client.Extensions = Record<never, never>>(
  options: CreateFleetOptions<X> = {}
): Client.Fleet & Client.Faces<X> => {
  const { extensions, simulate, ...fleetOptions } = options
  if (simulate !== true) {
    return Client.createFleet({ ...fleetOptions, ...(extensions === undefined ? {} : { extensions }) })
  }
  const engine = Layer.unwrapScoped(
    Effect.map(
      simulatedEnv(undefined, { quiet: true }),
      (env) => Flotta.layer({ ...fleetOptions, env: { ...fleetOptions.env, ...env } })
    )
  ).pipe(Layer.provide(NodeContext.layer))
  return Client.fromLayer(engine, extensions)
}
