/**
 * Where the command writes. stdout carries only the answer (pipe-clean: `flotta run ... | jq` works);
 * everything for the person at the terminal (footer, progress, logs) goes to stderr.
 */
import type { Console } from "effect"
import { Config, Effect, Option } from "effect"

export const stdout = Effect.fn("Output.stdout")(function*(text: string) {
  return yield* Effect.sync(() => void process.stdout.write(text.endsWith("\n") ? text : text + "\n"))
})

export const stderr = Effect.fn("Output.stderr")(function*(text: string) {
  return yield* Effect.sync(() => void process.stderr.write(text.endsWith("\n") ? text : text + "\n"))
})

/** Raw stderr, for in-place progress lines. */
export const stderrRaw = Effect.fn("Output.stderrRaw")(function*(text: string) {
  return yield* Effect.sync(() => void process.stderr.write(text))
})

/** Progress and colour only for a person at a terminal, never for a pipe or a file. */
export const stderrIsTTY = () => process.stderr.isTTY === true

/** Whether a person can answer a question on stdin (a terminal, not a pipe, a file or nothing). */
export const stdinIsTTY = () => process.stdin.isTTY === true

const ANSI = /\u001b\[[0-9;]*m/g

/**
 * The paragraph @effect/cli puts under every text option and argument ("A user-defined piece of text.", or
 * "... that is confidential." for a secret), in front of the real description: it says nothing, so it is
 * dropped (escape codes around it included).
 */
const FILLER =
  /^(?:\u001b\[[0-9;]*m)* *A user-defined piece of text(?: that is confidential)?\.(?:\u001b\[[0-9;]*m)*\n(?:\s*\n)?/gm

/** NO_COLOR set to anything but the empty string turns colour off (https://no-color.org). */
const noColor = Config.string("NO_COLOR").pipe(
  Config.option,
  Effect.map(Option.exists((value) => value.length > 0)),
  Effect.orElseSucceed(() => false)
)

/** @effect/cli's text (help, version, its usage errors) as this command prints it. */
export const cliText = (text: string, colour: boolean) => {
  const plain = colour ? text : text.replace(ANSI, "")
  return plain.replace(FILLER, "")
}

/**
 * The Console @effect/cli writes through: help and version on stdout, coloured only for a terminal (and not
 * with NO_COLOR), without the filler paragraph; its usage errors on stderr as `flotta: <message>`, like ours.
 */
export const cliConsole: Effect.Effect<Console.Console> = Effect.gen(function*() {
  const base = yield* Effect.console
  const off = yield* noColor
  const toStdout = (args: ReadonlyArray<unknown>) =>
    stdout(cliText(args.map(String).join(" "), !off && process.stdout.isTTY === true))
  const toStderr = (args: ReadonlyArray<unknown>) => {
    // One error per paragraph (several bad options are reported together).
    const errors = cliText(args.map(String).join(" "), !off && stderrIsTTY()).split(/\n\s*\n/)
      .map((error) => error.trim()).filter((error) => error.length > 0)
    return errors.length === 0 ? Effect.void : stderr(errors.map((error) => `flotta: ${error}`).join("\n"))
  }
  return {
    ...base,
    log: (...args: ReadonlyArray<unknown>) => toStdout(args),
    info: (...args: ReadonlyArray<unknown>) => toStdout(args),
    error: (...args: ReadonlyArray<unknown>) => toStderr(args),
    warn: (...args: ReadonlyArray<unknown>) => toStderr(args)
  } satisfies Console.Console
})
