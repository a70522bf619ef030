/**
 * `flotta runs`: the async runs and verifies of a running `flotta serve` (started over MCP, or by its scheduler),
 * over its MCP endpoint (see Connection), newest first; `flotta runs NAME` prints one's whole outcome. A run still
 * going is TurnPending, a failed one ends the command with its own error and exit code, and a name the serve does
 * not know is RunNotFound (exit code 12). `flotta diff RUN` prints what a run in a worktree changed: its files with
 * lines added and removed, then the patch (`--stat`: the files only); a run without a worktree is NoDiff.
 */
import { Args, Command, Options } from "@effect/cli"
import { Clock, Effect, Option } from "effect"
import * as Answers from "./Answers.js"
import { storeFlag, withSource } from "./ClientCommands.js"
import { callAndPrint, connection } from "./Connection.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
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

const diff = Command.make(
  "diff",
  {
    ...connection,
    store: storeFlag,
    stat: Options.boolean("stat").pipe(Options.withDescription("Print only the files and their counts, no patch.")),
    name: Flags.nameArgument("name", "The run's name.")
  },
  (flags) =>
    withSource(flags, (source) =>
      Effect.gen(function*() {
        const recorded = yield* source.diff(flags.name)
        yield* Output.stdout(
          flags.json ? JSON.stringify(recorded, null, 2) : RunViews.renderDiff(recorded, { patch: !flags.stat })
        )
      }))
).pipe(
  Command.withDescription(
    "Print what a run in a worktree changed against the commit it started from, as recorded when the run ended " +
      "(kept after gc): each file with lines added and removed, then the patch (cut at 256 KiB); while it goes on, " +
      "its changes so far. From a running serve, or the store itself (a shell `flotta run --worktree`'s too)."
  )
)

export const commands = [runs, diff] as const
