#!/usr/bin/env node
/**
 * The `flotta` command. Runs under NodeRuntime.runMain, so SIGINT and SIGTERM interrupt the program and every
 * agent's finalizer stops its child; failures end with the exit code of their kind (see ExitCode).
 */
import { Command, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, HashMap, Option } from "effect"
import { cli, flotta } from "./Cli.js"
import { exitCodeFor, interruptedExitCode } from "./ExitCode.js"
import * as Flags from "./Flags.js"
import * as Output from "./Output.js"
import { invalid } from "./SharedOptions.js"

const SUBCOMMANDS: ReadonlyArray<string> = [...HashMap.keys(Command.getSubcommands(flotta))].sort()

/** An unknown command, named with the word given (@effect/cli would only list the known ones). */
const checkSubcommand = (argv: ReadonlyArray<string>) => {
  const first = argv[2]
  return first === undefined || first.startsWith("-") || SUBCOMMANDS.includes(first)
    ? Effect.void
    : Effect.fail(invalid("<command>", `${Flags.quote(first)} is not one of ${SUBCOMMANDS.join(", ")}`))
}

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

checkSubcommand(process.argv).pipe(
  Effect.zipRight(cli(process.argv)),
  (program) => Effect.flatMap(Output.cliConsole, (console) => Effect.withConsole(program, console)),
  Effect.onExit(report),
  Effect.provide(NodeContext.layer),
  (program) =>
    NodeRuntime.runMain(program, {
      disableErrorReporting: true,
      teardown: (exit, onExit) => {
        const tag = tagOf(exit)
        onExit(Exit.isSuccess(exit) ? 0 : tag === "Interrupted" ? interruptedExitCode() : exitCodeFor(tag))
      }
    })
)
