/**
 * One run of the `flotta` command past `Main`'s answers: the command argv names is loaded alone (see Commands) and
 * run under NodeRuntime.runMain, so SIGINT and SIGTERM interrupt the program and every agent's finalizer stops its
 * child; failures end with the exit code of their kind (see ExitCode). The root's own options (`--wizard`,
 * `--completions`, `--log-level`) load the whole tree.
 */
import { Command, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Cause, Effect, Exit, HashSet, Option } from "effect"
import { COMMANDS } from "./Commands.js"
import { exitCodeFor, interruptedExitCode } from "./ExitCode.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import { invalid } from "./SharedOptions.js"
import { version } from "./Version.js"

const ROOT_DESCRIPTION = "A control plane for fleets of Claude Code agents (`flotta --help` lists the commands)."

/** A loaded module's command of this name (a module may declare several). */
const commandNamed = (loaded: unknown, name: string) =>
  (Array.isArray(loaded) ? loaded : [loaded]).find((command) =>
    HashSet.has(Command.getNames(command as Command.Command<string, never, never, unknown>), name)
  ) as Command.Command<string, never, unknown, unknown>

/** The program argv asks for: its command alone under the root, else the whole tree, else a usage error. */
const program = (argv: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const first = argv[2]
    const entry = first === undefined ? undefined : COMMANDS.get(first)
    if (entry !== undefined && first !== undefined) {
      const command = commandNamed(yield* Effect.promise(entry.load), first)
      const root = Command.make("flotta").pipe(
        Command.withDescription(ROOT_DESCRIPTION),
        Command.withSubcommands([command])
      )
      return yield* Command.run(root, { name: "flotta", version })(argv)
    }
    if (first === undefined || first.startsWith("-")) {
      const { cli } = yield* Effect.promise(() => import("./Cli.js"))
      return yield* cli(argv)
    }
    // An unknown command, named with the word given (@effect/cli would only list the known ones).
    return yield* invalid("<command>", `${Flags.quote(first)} is not one of ${[...COMMANDS.keys()].sort().join(", ")}`)
  })

/** The failure's tag, for its exit code; a signal's interruption is 130. */
const tagOf = (exit: Exit.Exit<unknown, unknown>): string | undefined => {
  if (Exit.isSuccess(exit)) return undefined
  if (Cause.isInterruptedOnly(exit.cause)) return "Interrupted"
  const failure = Cause.failureOption(exit.cause)
  if (Option.isNone(failure)) return undefined
  if (ValidationError.isValidationError(failure.value)) return "ValidationError"
  const error = failure.value as { readonly _tag?: string; readonly error?: { readonly _tag?: string } }
  // A server's typed refusal keeps the exit code of the fleet's own failure.
  return error._tag === "ToolFailed" ? error.error?._tag : error._tag
}

const report = (exit: Exit.Exit<unknown, unknown>) => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) return Effect.void
  const failure = Cause.failureOption(exit.cause)
  // @effect/cli has already printed its own usage errors.
  if (Option.isSome(failure) && ValidationError.isValidationError(failure.value)) return Effect.void
  const text = Option.match(failure, {
    onNone: () => Cause.pretty(exit.cause),
    onSome: (error) => {
      const { _tag = "Error", message = String(error) } = error as { readonly _tag?: string; readonly message?: string }
      // A server's refusal already starts with the fleet's own tag; a usage error names its flag, as
      // @effect/cli's own do (`--max-turns: "abc" is not a whole number above 0`).
      const hint = _tag === "StoreLocked" ? " (the config's \"store\", or FLOTTA_STORE)" : ""
      return _tag === "ToolFailed" || _tag === "UsageError" ? message : `${_tag}: ${message}${hint}`
    }
  })
  return Output.stderr(`flotta: ${text}`)
}

/** How a run of the command ended, as the code it exits with: 0, the code of its failure's kind, or 130 for a signal. */
export const exitCodeOf = (exit: Exit.Exit<unknown, unknown>): number => {
  if (Exit.isSuccess(exit)) return 0
  const tag = tagOf(exit)
  return tag === "Interrupted" ? interruptedExitCode() : exitCodeFor(tag)
}

/**
 * The command argv names, writing through the command's console and printing its failure: the whole run but the
 * process's runtime (what `launch` runs, and what the tests of printed text run in process).
 */
export const main = Effect.fn("Launch.main")(function*(argv: ReadonlyArray<string>) {
  return yield* program(argv).pipe(
    (program) => Effect.flatMap(Output.cliConsole, (console) => Effect.withConsole(program, console)),
    Effect.onExit(report),
    Effect.provide(NodeContext.layer)
  )
})

/** Runs the command argv names, and exits with the code of how it ended. */
export const launch = (argv: ReadonlyArray<string>) =>
  NodeRuntime.runMain(main(argv), {
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(exitCodeOf(exit))
  })
