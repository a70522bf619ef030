/**
 * `flotta repl`: a Node REPL with a live fleet in scope as `fleet` (the Promise facade: `fleet.spawn(...)`,
 * `await fleet.ask(...)`, top-level await) and the config's sessions already up. Leaving the REPL (`.exit`,
 * Ctrl-D, end of input) shuts the fleet down.
 */
import { Command } from "@effect/cli"
import { createFleet } from "@flotta/core/Client"
import { Effect } from "effect"
import * as repl from "node:repl"
import * as ConfigFile from "./ConfigFile.js"
import * as Engine from "./Engine.js"
import * as ExitCode from "./ExitCode.js"
import * as Output from "./Output.js"
import * as Shared from "./SharedOptions.js"

export const command = Command.make(
  "repl",
  { simulate: Shared.simulate, config: Shared.config },
  (flags) =>
    Effect.gen(function*() {
      yield* ExitCode.signalStopsCleanly
      const config = yield* Shared.loadConfig(flags.config)
      const env = flags.simulate ? yield* Engine.simulatedEnv : {}
      const fleet = createFleet(Engine.fleetOptions(config, env))
      yield* Effect.addFinalizer(() => Effect.promise(() => fleet.shutdown()))
      const booted = yield* Effect.promise(() => fleet.boot(ConfigFile.fleetOf(config)))
      for (const failed of booted.failed) {
        yield* Output.stderr(`flotta: ${failed.name} did not start: ${failed.error.message}`)
      }
      yield* Output.stderr(
        `flotta repl: \`fleet\` is live` +
          (booted.started.length > 0 ? ` with ${booted.started.join(", ")}` : "") +
          `. Try: await fleet.spawn("scout"); await fleet.ask("scout", "hello"). Leave with .exit`
      )
      yield* Effect.async<void>((resume) => {
        const server = repl.start({ prompt: "flotta> ", input: process.stdin, output: process.stdout })
        server.context["fleet"] = fleet
        server.on("exit", () => resume(Effect.void))
        return Effect.sync(() => server.close())
      })
    }).pipe(Effect.scoped)
).pipe(
  Command.withDescription("A Node REPL with a live fleet as `fleet` (top-level await works)")
)
