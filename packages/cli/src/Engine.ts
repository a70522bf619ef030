/**
 * The engine as the command composes it: the config's settings, and with `--simulate` the real claude CLI
 * pointed at the built-in scripted model on 127.0.0.1 (no account, no spend, nothing of ~/.claude touched).
 */
import { FileSystem } from "@effect/platform"
import * as Flotta from "@flotta/core/Flotta"
import { Effect, Layer } from "effect"
import type { LoadedConfig } from "./ConfigFile.js"
import * as Output from "./Output.js"
import * as Simulator from "./Simulator.js"

/** The child environment of a simulated fleet; the simulator lives as long as the surrounding scope. */
export const simulatedEnv = Effect.gen(function*() {
  const simulator = yield* Simulator.start()
  const fs = yield* FileSystem.FileSystem
  const root = yield* fs.makeTempDirectoryScoped({ prefix: "flotta-simulate-" })
  yield* Output.stderr(`flotta: simulating: claude talks to a scripted model at ${simulator.url} (no account, no cost)`)
  return yield* Simulator.offlineEnv(simulator.url, root)
})

/** The engine's options for a config, with the children's extra environment. */
export const fleetOptions = (config: LoadedConfig, env: Record<string, string>): Flotta.FleetOptions => ({
  env,
  ...(config.claudePath === undefined ? {} : { claudePath: config.claudePath }),
  ...(config.maxConcurrentStarts === undefined ? {} : { maxConcurrentStarts: config.maxConcurrentStarts })
})

/** The whole engine (Flotta, Registry, ReportLog, Runs) for a config, simulated or real. */
export const layer = (config: LoadedConfig, options: { readonly simulate: boolean }) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const env = options.simulate ? yield* simulatedEnv : {}
    return Flotta.layer(fleetOptions(config, env))
  }))
