/**
 * `flotta serve`: boots the declared fleet, with the MCP server and the scheduler when the config has them,
 * logs to stderr, and runs until a signal (SIGINT, SIGTERM) closes every agent and the port.
 */
import { Command } from "@effect/cli"
import { Flotta } from "@flotta/core/Flotta"
import * as McpServer from "@flotta/mcp/McpServer"
import * as Stdio from "@flotta/mcp/Stdio"
import { Effect, Option } from "effect"
import * as Composition from "./Composition.js"
import type * as ConfigFile from "./ConfigFile.js"
import * as ExitCode from "./ExitCode.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"

/** Starts the config's sessions (run entries become templates) and says what did not come up. */
export const boot = (config: ConfigFile.LoadedConfig) =>
  Effect.gen(function*() {
    const fleet = yield* Flotta
    const booted = yield* fleet.bootFleet(config.fleet.fleet)
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
      const features = { simulate: flags.simulate, mcp: true, schedule: true }
      const on = Composition.enabled(config, features)
      const program = Effect.gen(function*() {
        const booted = yield* boot(config)
        const mcp = yield* Effect.serviceOption(McpServer.McpServer)
        yield* Output.stderr(
          `flotta serve: ${booted.started.length} agent(s) up${
            booted.started.length > 0 ? ` (${booted.started.join(", ")})` : ""
          }; MCP ${Option.match(mcp, { onNone: () => "off", onSome: (server) => `at ${server.url}` })}; ` +
            `scheduler ${on.schedule ? "on" : "off"}. Stop with Ctrl-C.`
        )
        return yield* Effect.never
      })
      return yield* program.pipe(
        Effect.provide(Composition.layer(config, features)),
        Effect.provide(Stdio.stderrLogger)
      )
    })
).pipe(Command.withDescription("Boot the configured fleet, with the MCP server and scheduler when configured"))
