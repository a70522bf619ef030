/**
 * `flotta serve`: boots the declared fleet, with the MCP server and the scheduler when the config has them,
 * logs to stderr, and runs until a signal (SIGINT, SIGTERM) closes every agent and the port.
 */
import { Command } from "@effect/cli"
import { Flotta } from "@flotta/core/Flotta"
import * as McpServer from "@flotta/mcp/McpServer"
import * as Stdio from "@flotta/mcp/Stdio"
import * as SchedulerConfig from "@flotta/scheduler/SchedulerConfig"
import { Effect, Layer, Option } from "effect"
import * as ConfigFile from "./ConfigFile.js"
import * as Engine from "./Engine.js"
import * as ExitCode from "./ExitCode.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"

/** The MCP server when the config has an `mcp` section (not switched off with `enabled: false`). */
export const mcpLayer = (config: ConfigFile.LoadedConfig) => {
  const section = config.raw["mcp"] as (ConfigFile.FlottaConfig["mcp"] & Record<string, unknown>) | undefined
  if (section === undefined || section.enabled === false) return Layer.empty
  const { enabled: _enabled, sessionIdleTimeoutMs, ...input } = section
  return McpServer.layer({
    ...input,
    ...(typeof sessionIdleTimeoutMs === "number" ? { sessionIdleTimeout: sessionIdleTimeoutMs } : {})
  })
}

/** Starts the config's sessions (run entries become templates) and says what came up. */
export const boot = (config: ConfigFile.LoadedConfig) =>
  Effect.gen(function*() {
    const fleet = yield* Flotta
    const booted = yield* fleet.boot(ConfigFile.fleetOf(config))
    for (const failed of booted.failed) {
      yield* Output.stderr(`flotta: agent ${failed.name} did not start: ${failed.error.message}`)
    }
    return booted
  })

export const command = Command.make(
  "serve",
  { simulate: Shared.simulate, config: Shared.config },
  (flags) =>
    Effect.gen(function*() {
      yield* ExitCode.signalStopsCleanly
      const config = yield* Shared.loadConfig(flags.config)
      const program = Effect.gen(function*() {
        const booted = yield* boot(config)
        const mcp = yield* Effect.serviceOption(McpServer.McpServer)
        const scheduler = config.raw["schedule"] === undefined ? "off" : "on"
        yield* Output.stderr(
          `flotta serve: ${booted.started.length} agent(s) up${
            booted.started.length > 0 ? ` (${booted.started.join(", ")})` : ""
          }; MCP ${Option.match(mcp, { onNone: () => "off", onSome: (server) => `at ${server.url}` })}; ` +
            `scheduler ${scheduler}. Stop with Ctrl-C.`
        )
        return yield* Effect.never
      })
      const features = Layer.mergeAll(
        mcpLayer(config),
        SchedulerConfig.layerFromJson(config.raw)
      )
      return yield* program.pipe(
        Effect.provide(features.pipe(Layer.provideMerge(Engine.layer(config, { simulate: flags.simulate })))),
        Effect.provide(Stdio.stderrLogger)
      )
    })
).pipe(Command.withDescription("Boot the configured fleet, with the MCP server and scheduler when configured"))
