/**
 * `flotta mcp`: the fleet's MCP tools over stdio, for a client that starts its servers itself
 * (`claude mcp add flotta -- npx flotta mcp`). stdout carries nothing but protocol; logs go to stderr. The
 * config's run templates are available; its sessions are not started (only serve and repl boot a fleet).
 */
import { Command } from "@effect/cli"
import { Flotta } from "@flotta/core/Flotta"
import * as Stdio from "@flotta/mcp/Stdio"
import { Effect } from "effect"
import * as ConfigFile from "./ConfigFile.js"
import * as Engine from "./Engine.js"
import * as ExitCode from "./ExitCode.js"
import * as Shared from "./SharedOptions.js"

export const command = Command.make(
  "mcp",
  { simulate: Shared.simulate, config: Shared.config },
  (flags) =>
    Effect.gen(function*() {
      yield* ExitCode.signalStopsCleanly
      const config = yield* Shared.loadConfig(flags.config)
      return yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        const { agents, fleetDefaults } = ConfigFile.fleetOf(config)
        const templates = agents.filter((a) => (a as { readonly lifecycle?: unknown })?.lifecycle === "run")
        yield* fleet.boot({ fleetDefaults, agents: templates })
        yield* Stdio.serve()
      }).pipe(
        Effect.scoped,
        Effect.provide(Engine.layer(config, { simulate: flags.simulate })),
        Effect.provide(Stdio.stderrLogger)
      )
    })
).pipe(
  Command.withDescription("Serve the fleet's MCP tools over stdio (for `claude mcp add flotta -- npx flotta mcp`)")
)
