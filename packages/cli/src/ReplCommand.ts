/**
 * `flotta repl`: a Node REPL with a live fleet in scope as `fleet` (the Promise facade: `fleet.spawn(...)`,
 * `await fleet.ask(...)`, top-level await) and the config's sessions already up, with the config's MCP server
 * and scheduler (`fleet.scheduler`) unless `--no-mcp` / `--no-schedule`, and its webhooks (the notifications, and
 * the triggers on the MCP server or dashboard). Leaving the REPL (`.exit`, Ctrl-D, end of input) shuts the fleet
 * down. State lives where `serve` keeps it (the config's store, else `.flotta/state.db`), so the two take turns
 * with one project's fleet: one at a time holds its store.
 */
import { Command, Options } from "@effect/cli"
import { fromLayer } from "@flotta/core/Client"
import * as SchedulerClient from "@flotta/scheduler/Client"
import { Effect, Option } from "effect"
import * as repl from "node:repl"
import * as Composition from "./Composition.js"
import * as Output from "./Output.js"
import * as ServeCommand from "./ServeCommand.js"
import * as Shared from "./SharedOptions.js"

const noMcp = Options.boolean("no-mcp").pipe(
  Options.withDescription("Do not start the config's MCP server or dashboard (no port is opened).")
)
const noSchedule = Options.boolean("no-schedule").pipe(
  Options.withDescription("Do not start the config's scheduler (fleet.scheduler is then undefined).")
)

export const command = Command.make(
  "repl",
  { simulate: Shared.simulate, config: Shared.config, noMcp, noSchedule },
  (flags) =>
    Effect.gen(function*() {
      const features = {
        simulate: flags.simulate,
        mcp: !flags.noMcp,
        dashboard: !flags.noMcp,
        schedule: !flags.noSchedule,
        webhooks: true,
        durable: true
      }
      const { config, on } = yield* ServeCommand.setUp(flags.config, features)
      const fleet = fromLayer(Composition.layer(config, features), { scheduler: SchedulerClient.face(on.schedule) })
      yield* Effect.addFinalizer(() => Effect.promise(() => fleet.shutdown()))
      // Built here, so that a layer that cannot start (a port in use, say) fails the command with its own error.
      const booted = yield* Effect.flatten(Effect.promise(() =>
        fleet.runtime.runPromiseExit(Effect.gen(function*() {
          const { live } = yield* ServeCommand.boot(config)
          const mcp = on.mcp ? yield* Composition.mcpUrl : Option.none<string>()
          const state = yield* ServeCommand.stateLines("flotta repl")
          const dashboard = yield* Composition.dashboardUrl
          return {
            live,
            mcp,
            dashboard,
            state
          }
        }))
      ))
      yield* Output.stderr(
        [
          ...booted.state,
          `flotta repl: \`fleet\` is live` +
          (booted.live.length > 0 ? ` with ${booted.live.join(", ")}` : "") +
          Option.match(booted.mcp, { onNone: () => "", onSome: (url) => `; MCP at ${url}` }) +
          Option.match(booted.dashboard, { onNone: () => "", onSome: (url) => `; dashboard at ${url}` }) +
          (on.schedule ? "; fleet.scheduler is on" : "") +
          (on.webhooks
            ? `; ${ServeCommand.describeWebhooks(config, on, Option.orElse(booted.mcp, () => booted.dashboard))}`
            : "") +
          `. Try: await fleet.spawn("scout"); await fleet.ask("scout", "hello"). Leave with .exit`
        ].join("\n")
      )
      yield* Effect.async<void>((resume) => {
        const server = repl.start({ prompt: "flotta> ", input: process.stdin, output: process.stdout })
        server.context["fleet"] = fleet
        server.on("exit", () => resume(Effect.void))
        return Effect.sync(() => server.close())
      })
    }).pipe(Effect.scoped)
).pipe(
  Command.withDescription("A Node REPL with a live fleet as `fleet` (top-level await works).")
)
