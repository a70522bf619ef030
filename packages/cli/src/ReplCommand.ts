/**
 * `flotta repl`: a Node REPL with a live fleet in scope as `fleet` (the Promise facade: `fleet.spawn(...)`,
 * `await fleet.ask(...)`, top-level await) and the config's sessions already up, with the config's MCP server
 * and scheduler (`fleet.scheduler`) unless `--no-mcp` / `--no-schedule`, and its webhooks (the notifications, and
 * the triggers on the MCP server or dashboard). Leaving the REPL (`.exit`, Ctrl-D, end of input) shuts the fleet
 * down. State lives where `serve` keeps it (the config's store, else `.flotta/state.db`), so the two take turns
 * with one project's fleet: one at a time holds its store. A failure prints as its tag and message (the stack with
 * `--verbose`); piped input runs line by line, in order (ReplSession). The banner's first steps work with the
 * fleet as booted (`firstSteps`).
 */
import { Command, Options } from "@effect/cli"
import { fromLayer } from "@flotta/core/Client"
import * as SchedulerClient from "@flotta/scheduler/Client"
import { Effect, Option } from "effect"
import * as Composition from "./Composition.js"
import * as Output from "./Output.js"
import * as ReplSession from "./ReplSession.js"
import * as ServeCommand from "./ServeCommand.js"
import * as Shared from "./SharedOptions.js"

const noMcp = Options.boolean("no-mcp").pipe(
  Options.withDescription("Do not start the config's MCP server or dashboard (no port is opened).")
)
const noSchedule = Options.boolean("no-schedule").pipe(
  Options.withDescription("Do not start the config's scheduler (fleet.scheduler is then undefined).")
)
const verbose = Options.boolean("verbose").pipe(
  Options.withDescription("Print a failure's stack under its tag and message.")
)

/**
 * The banner's first steps, which work with the fleet as booted: ask an agent that is up (init's `scout`), and
 * start one first only when none is.
 */
export const firstSteps = (live: ReadonlyArray<string>): ReadonlyArray<string> => {
  const name = live.includes("scout") ? "scout" : live[0]
  return name === undefined
    ? ["await fleet.spawn(\"scout\")", "await fleet.ask(\"scout\", \"hello\")"]
    : ["await fleet.list()", `await fleet.ask(${JSON.stringify(name)}, "hello")`]
}

export const command = Command.make(
  "repl",
  { simulate: Shared.simulate, config: Shared.config, noMcp, noSchedule, verbose },
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
          `. Try: ${firstSteps(booted.live).join("; ")}. Leave with .exit`
        ].join("\n")
      )
      yield* ReplSession.run({
        prompt: "flotta> ",
        context: { fleet },
        input: process.stdin,
        output: process.stdout,
        verbose: flags.verbose
      })
    }).pipe(Effect.scoped)
).pipe(
  Command.withDescription(
    "A Node REPL with a live fleet as `fleet` (top-level await works). Piped input runs a line at a time, each " +
      "settled before the next; the REPL ends after the last."
  )
)
