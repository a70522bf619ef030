/**
 * `flotta runs`: the async runs and verifies of a running `flotta serve` (started over MCP, or by its scheduler) and
 * the shell's `flotta run`s it recorded, newest first; `flotta runs NAME` prints one's whole outcome. A run still
 * going is TurnPending, a failed one ends the command with its own error and exit code, and a name nobody knows is
 * RunNotFound (exit code 12). `flotta diff RUN` prints what a run in a worktree changed: its files with lines added
 * and removed, then the patch (`--stat`: the files only); a run without a worktree is NoDiff. Each reads a running
 * serve over its MCP endpoint (see Connection), else the store itself (`--store`, or the config's SQLite file when no
 * serve answers), with the records waiting in its inbox.
 */
import { Args, Command, Options } from "@effect/cli"
import { Clock, Effect, Option } from "effect"
import { storeFlag, withSource } from "./ClientCommands.js"
import { connection } from "./Connection.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import * as RunViews from "./RunViews.js"
import * as Shared from "./SharedOptions.js"
import { invalid } from "./SharedOptions.js"

const runs = Command.make(
  "runs",
  {
    ...connection,
    store: storeFlag,
    state: Flags.choice("state", ["running", "succeeded", "failed"]).pipe(
      Flags.optional("List only the runs in this state.")
    ),
    limit: Flags.positiveInteger("limit").pipe(Flags.optional("List at most this many, newest first.")),
    label: Flags.labels("List only the runs with this label (repeat it: with every one of them)."),
    name: Flags.nameArgument(
      "name",
      "A run's (or verify's) name: print its whole outcome instead of the list."
    ).pipe(Args.optional)
  },
  (flags) =>
    Effect.gen(function*() {
      if (Option.isSome(flags.name)) {
        const narrowed = Option.isSome(flags.state)
          ? "--state"
          : Option.isSome(flags.limit)
          ? "--limit"
          : flags.label.length > 0
          ? "--label"
          : undefined
        if (narrowed !== undefined) {
          return yield* invalid(narrowed, "narrows the list of runs: give it without a <name>")
        }
        const name = flags.name.value
        return yield* withSource(flags, (source) =>
          Effect.flatMap(source.runResult(name), (result) =>
            Output.stdout(
              flags.json
                ? JSON.stringify({ name, kind: result.kind, result }, null, 2)
                : RunViews.renderOutcome(result)
            )))
      }
      const now = yield* Clock.currentTimeMillis
      const query = {
        ...Shared.ifSome("state", flags.state),
        ...Shared.ifSome("limit", flags.limit),
        ...Flags.labelsOf(flags.label)
      }
      return yield* withSource(flags, (source) =>
        Effect.flatMap(source.runs(query), (runs) =>
          Output.stdout(flags.json ? JSON.stringify({ runs }, null, 2) : RunViews.renderRuns(runs, now))))
    })
).pipe(
  Command.withDescription(
    "List the runs and verifies, newest first: state, start, how long it took, cost and branch: a running " +
      "`flotta serve`'s (started over MCP or by its scheduler) and the shell's `flotta run`s, from the serve or the " +
      "store itself. With a name, print that run's whole outcome: its answer and footer, or a verify's checks."
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
