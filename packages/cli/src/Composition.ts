/**
 * The one composition `serve`, `repl`, `mcp` and `run` use: the engine for the config's `fleet` section, and
 * on top of it the MCP server (`mcp` section) and the scheduler (`schedule` section) when the config has them
 * and the command wants them; an absent one is `Layer.empty`. With `--simulate`, the children are the real
 * claude CLI pointed at the built-in scripted model on 127.0.0.1 (no account, no spend, nothing of ~/.claude
 * touched). The platform (`NodeContext`) is provided here, at the edge.
 */
import { FileSystem } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import * as Flotta from "@flotta/core/Flotta"
import * as McpServer from "@flotta/mcp/McpServer"
import { Scheduler } from "@flotta/scheduler/Scheduler"
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
  ...(config.fleet.claudePath === undefined ? {} : { claudePath: config.fleet.claudePath }),
  ...(config.fleet.maxConcurrentStarts === undefined ? {} : { maxConcurrentStarts: config.fleet.maxConcurrentStarts })
})

export interface Features {
  readonly simulate: boolean
  /** Serve the config's `mcp` section over HTTP (when it has one). */
  readonly mcp?: boolean
  /** Run the config's scheduler (when it has a `schedule`). */
  readonly schedule?: boolean
}

/** What a composition switched on, for the command to report. */
export const enabled = (config: LoadedConfig, features: Features) => ({
  mcp: features.mcp === true && config.mcp !== undefined,
  schedule: features.schedule === true && config.schedule !== undefined
})

/** The engine, with the MCP server and the scheduler on top when the config has them and `features` asks. */
export const layer = (config: LoadedConfig, features: Features) =>
  Layer.unwrapScoped(Effect.gen(function*() {
    const env = features.simulate ? yield* simulatedEnv : {}
    const on = enabled(config, features)
    const engine = Flotta.layer(fleetOptions(config, env))
    return Layer.mergeAll(
      McpServer.layer(on.mcp ? config.mcp : undefined),
      Scheduler.layer(on.schedule ? config.schedule : undefined)
    ).pipe(Layer.provideMerge(engine))
  })).pipe(Layer.provide(NodeContext.layer))
