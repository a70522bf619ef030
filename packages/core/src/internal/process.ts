/**
 * Short-lived commands (git, verify checks): run to completion with an optional deadline, output captured
 * with a capped tail, the whole process group killed when the deadline passes or the caller is interrupted.
 */
import * as Command from "@effect/platform/Command"
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import { Clock, Data, Duration, Effect, Fiber, Option, Stream } from "effect"

export interface Outcome {
  readonly exitCode: number | null
  readonly output: string
  readonly timedOut: boolean
  readonly durationMs: number
}

export class CommandFailed extends Data.TaggedError("CommandFailed")<{
  readonly command: string
  readonly reason: string
}> {}

/** Keeps the last `max` characters of a stream of text chunks. */
const tail = (max: number) => {
  let text = ""
  return {
    push: (chunk: string) => {
      text += chunk
      if (text.length > max * 2) text = text.slice(-max)
    },
    value: () => (text.length > max ? "…" + text.slice(-max) : text)
  }
}

export const run = Effect.fnUntraced(function*(command: string, args: ReadonlyArray<string>, options: {
  readonly cwd: string
  readonly timeout?: Duration.DurationInput
  readonly env?: Record<string, string>
  readonly maxOutput?: number
}) {
  return yield* Effect.scoped(Effect.gen(function*() {
    const executor = yield* CommandExecutor.CommandExecutor
    const started = yield* Clock.currentTimeMillis
    const proc = yield* executor.start(
      Command.make(command, ...args).pipe(
        Command.workingDirectory(options.cwd),
        Command.env(options.env ?? {}),
        Command.feed("") // stdin closed at once: a check that reads it gets EOF instead of hanging
      )
    ).pipe(Effect.mapError((e) => new CommandFailed({ command, reason: e.message })))
    const output = tail(options.maxOutput ?? 8000)
    const collect = (stream: Stream.Stream<Uint8Array, unknown>) =>
      stream.pipe(Stream.decodeText(), Stream.runForEach((s) => Effect.sync(() => output.push(s))), Effect.ignore)
    const readers = yield* Effect.fork(Effect.all([collect(proc.stdout), collect(proc.stderr)], { concurrency: 2 }))
    const exit = proc.exitCode.pipe(Effect.option, Effect.map(Option.getOrNull))
    const waited = options.timeout === undefined
      ? yield* Effect.map(exit, Option.some)
      : yield* exit.pipe(Effect.timeoutOption(options.timeout))
    if (Option.isNone(waited)) {
      yield* proc.kill("SIGKILL").pipe(Effect.ignore)
    }
    yield* Fiber.join(readers).pipe(Effect.timeoutOption("2 seconds"))
    return {
      exitCode: Option.getOrNull(waited),
      output: output.value(),
      timedOut: Option.isNone(waited),
      durationMs: (yield* Clock.currentTimeMillis) - started
    }
  }))
})
