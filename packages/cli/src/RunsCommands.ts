/**
 * `flotta runs`: the async runs and verifies of a running `flotta serve` (started over MCP, or by its scheduler),
 * over its MCP endpoint (see Connection), newest first; `flotta runs NAME` prints one's whole outcome. A run still
 * going is TurnPending, a failed one ends the command with its own error and exit code, and a name the serve does
 * not know is RunNotFound (exit code 12).
 */
import { Args, Command, Options } from "@effect/cli"
import type { RunResult, VerifyReport } from "@flotta/core/Run"
import type { RunView } from "@flotta/core/RunList"
import { Clock, Effect, Option } from "effect"
import { call, connection, withClient } from "./Connection.js"
import * as Flags from "./Flags.js"
import * as RunViews from "./RunViews.js"
import { invalid } from "./SharedOptions.js"

const runs = Command.make(
  "runs",
  {
    ...connection,
    state: Flags.choice("state", ["running", "succeeded", "failed"]).pipe(
      Options.withDescription("List only the runs in this state."),
      Options.optional
    ),
    limit: Flags.positiveInteger("limit").pipe(
      Options.withDescription("List at most this many, newest first."),
      Options.optional
    ),
    name: Flags.nameArgument(
      "name",
      "A run's (or verify's) name: print its whole outcome instead of the list."
    ).pipe(Args.optional)
  },
  (flags) =>
    Effect.gen(function*() {
      if (Option.isSome(flags.name)) {
        const narrowed = Option.isSome(flags.state) ? "--state" : Option.isSome(flags.limit) ? "--limit" : undefined
        if (narrowed !== undefined) {
          return yield* invalid(narrowed, "narrows the list of runs: give it without a <name>")
        }
        const name = flags.name.value
        return yield* withClient(
          flags,
          (client) => call(client, "flotta_run_result", { name }),
          (v) => RunViews.renderOutcome(v["result"] as RunResult | VerifyReport)
        )
      }
      const now = yield* Clock.currentTimeMillis
      const query = {
        ...Option.match(flags.state, { onNone: () => ({}), onSome: (state) => ({ state }) }),
        ...Option.match(flags.limit, { onNone: () => ({}), onSome: (limit) => ({ limit }) })
      }
      return yield* withClient(
        flags,
        (client) => call(client, "flotta_runs", query),
        (v) => RunViews.renderRuns((v["runs"] ?? []) as ReadonlyArray<RunView>, now)
      )
    })
).pipe(
  Command.withDescription(
    "List the async runs and verifies of a running `flotta serve`, newest first: state, start, how long it took, " +
      "cost and branch. With a name, print that run's whole outcome: its answer and footer, or a verify's checks."
  )
)

export const commands = [runs] as const
