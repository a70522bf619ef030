/**
 * `flotta mcp`: the fleet's MCP tools over stdio, for a client that starts its servers itself
 * (`claude mcp add flotta -- npx flotta mcp`). stdout carries nothing but protocol; logs go to stderr. The
 * config's run templates are available; its sessions are not started, and neither the HTTP server nor the
 * scheduler runs (each client session starts its own `flotta mcp`: only serve and repl run a fleet for long), so
 * its steering tools answer SchedulerNotEnabled.
 * Its state is in memory, whatever the config's `store`: two clients (or a client and a running serve) must not
 * contend for one store, which one host holds at a time.
 */
import { Command } from "@effect/cli"
import { Flotta } from "@flotta/core/Flotta"
import * as Stdio from "@flotta/mcp/Stdio"
import { Effect } from "effect"
import * as Composition from "./Composition.js"
import * as ExitCode from "./ExitCode.js"
import * as Shared from "./SharedOptions.js"

export const command = Command.make(
  "mcp",
  { simulate: Shared.simulate, config: Shared.config },
  (flags) =>
    Effect.gen(function*() {
      yield* ExitCode.signalStopsCleanly
      const config = yield* Shared.loadConfig(flags.config)
      const { rejected, templates } = config.fleet.fleet
      return yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        yield* fleet.bootFleet({ sessions: [], templates, rejected })
        yield* Stdio.serve()
      }).pipe(
        Effect.scoped,
        Effect.provide(Composition.layer(config, { simulate: flags.simulate })),
        Effect.provide(Stdio.stderrLogger)
      )
    })
).pipe(
  Command.withDescription("Serve the fleet's MCP tools over stdio (for `claude mcp add flotta -- npx flotta mcp`).")
)
