/**
 * `flotta runs`: the async runs and verifies of a running `flotta serve` (started over MCP, or by its scheduler),
 * over its MCP endpoint (see Connection), newest first; `flotta runs NAME` prints one's whole outcome. A run still
 * going is TurnPending, a failed one ends the command with its own error and exit code, and a name the serve does
 * not know is RunNotFound (exit code 12).
 */
import { Args, Command } from "@effect/cli"
import { Clock, Effect, Option } from "effect"
import * as Answers from "./Answers.js"
import { callAndPrint, connection } from "./Connection.js"
import * as Flags from "./Flags.js"
import * as RunViews from "./RunViews.js"
import * as Shared from "./SharedOptions.js"
import { invalid } from "./SharedOptions.js"

const runs = Command.make(
  "runs",
  {
    ...connection,
    state: Flags.choice("state", ["running", "succeeded", "failed"]).pipe(
      Flags.optional("List only the runs in this state.")
    ),
    limit: Flags.positiveInteger("limit").pipe(Flags.optional("List at most this many, newest first.")),
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
        return yield* callAndPrint(flags, "flotta_run_result", { name }, Answers.RunOutcome, (v) =>
          RunViews.renderOutcome(v.result))
      }
      const now = yield* Clock.currentTimeMillis
      const query = {
        ...Shared.ifSome("state", flags.state),
        ...Shared.ifSome("limit", flags.limit)
      }
      return yield* callAndPrint(flags, "flotta_runs", query, Answers.Runs, (v) =>
        RunViews.renderRuns(v.runs, now))
    })
).pipe(
  Command.withDescription(
    "List the async runs and verifies of a running `flotta serve`, newest first: state, start, how long it took, " +
      "cost and branch. With a name, print that run's whole outcome: its answer and footer, or a verify's checks."
  )
)

export const commands = [runs] as const
