/**
 * One live `claude` child process: exactly one stdin writer, one stdout reader, stderr drained into a tail,
 * control requests correlated by id, and kill escalation (stdin EOF, SIGTERM, SIGKILL) when its scope closes.
 * Frames that belong to turns are handed to the agent as they are read (`onFrame`); its end, to `onExit`. Also the
 * child's environment: the host's, less the parent-session markers, and who waits at a usage limit.
 */
import * as Command from "@effect/platform/Command"
import * as CommandExecutor from "@effect/platform/CommandExecutor"
import { Cause, Clock, Deferred, Effect, Fiber, FiberSet, Mailbox, Option, Predicate, Stream } from "effect"
import { StringDecoder } from "node:string_decoder"
import type { ClaudeExecutable, ClaudeProcess, ExitInfo, StartOptions, TurnFrame } from "./ClaudeProcess.js"
import { ControlRequestFailed, StartError } from "./ClaudeProcess.js"
import * as Protocol from "./ClaudeProtocol.js"

/**
 * Markers a Claude Code session sets for itself. A fleet running inside such a session must not hand them to
 * its children, which would otherwise believe they are nested in it. Credentials and endpoints pass through.
 */
export const PARENT_SESSION_MARKERS: ReadonlyArray<string> = [
  "CLAUDECODE",
  "CLAUDE_CODE_ENTRYPOINT",
  "CLAUDE_CODE_SSE_PORT",
  "CLAUDE_AGENT_SDK_VERSION",
  "CLAUDE_CODE_SDK_READS_SESSION_STATE"
]

/**
 * The CLI's own headless wait at a usage limit (undocumented in 2.1.332; CLAUDE-CLI.md, "Usage limits"): with
 * `1` the CLI waits inside the turn until the reset and retries; with `0` it reports the limit at once.
 */
export const RETRY_WATCHDOG = "CLAUDE_CODE_RETRY_WATCHDOG"

/**
 * Whether the CLI, not the fleet, waits out usage limits for an agent with this environment (its `env` over the
 * fleet's): only when it sets `CLAUDE_CODE_RETRY_WATCHDOG=1` itself. Such an agent is never parked.
 */
export const cliWaitsAtLimits = (env: Readonly<Record<string, string>>): boolean => env[RETRY_WATCHDOG] === "1"

/**
 * The child's environment: the host's, less the parent-session markers, plus the agent's own additions.
 * This is the one place that reads `process.env` whole: a child inherits the host environment by design.
 *
 * Exactly one side waits at a usage limit, never both: the fleet parks (`Parking`), so every child gets
 * `CLAUDE_CODE_RETRY_WATCHDOG=0` (whatever the host has), unless the agent's own environment asks for `1`: then
 * the CLI waits inside the turn and the fleet does not park that agent (`cliWaitsAtLimits`).
 */
export const childEnv = (extra: Readonly<Record<string, string>> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !PARENT_SESSION_MARKERS.includes(key)) env[key] = value
  }
  Object.assign(env, extra)
  env[RETRY_WATCHDOG] = cliWaitsAtLimits(extra) ? "1" : "0"
  return env
}

const STDERR_LINES = 40
const STDERR_BYTES = 16_384

/** The last `max` bytes of a byte stream, read back as its last lines. */
const tailBuffer = (max: number) => {
  let chunks: Array<Uint8Array> = []
  let size = 0
  return {
    push: (chunk: Uint8Array) => {
      chunks.push(chunk)
      size += chunk.length
      while (size - chunks[0]!.length >= max) size -= chunks.shift()!.length
    },
    lines: (count: number) => {
      const bytes = new Uint8Array(size)
      let at = 0
      for (const chunk of chunks) {
        bytes.set(chunk, at)
        at += chunk.length
      }
      chunks = size === 0 ? [] : [bytes]
      const text = new TextDecoder().decode(bytes).replace(/\r?\n$/, "")
      return text.split(/\r?\n/).slice(-count).join("\n")
    }
  }
}
const NEWLINE = new TextEncoder().encode("\n")

/** Frames that belong to turns (everything but the control protocol). */
const isTurnFrame = (frame: Protocol.Frame): frame is TurnFrame =>
  frame._tag !== "ControlRequest" && frame._tag !== "ControlResponse" && frame._tag !== "ControlCancel"

let requestCounter = 0
const nextRequestId = () => `flotta_${(++requestCounter).toString(36)}_${Math.random().toString(36).slice(2, 8)}`

/** Starts one process in the current scope; closing the scope stops it (EOF, then SIGTERM, then SIGKILL). */
export const start = Effect.fnUntraced(
  function*(options: StartOptions & { readonly executable: ClaudeExecutable }) {
    const executor = yield* CommandExecutor.CommandExecutor
    const command = Command.make(options.executable.command, ...options.executable.prefixArgs, ...options.args).pipe(
      Command.workingDirectory(options.cwd),
      Command.env(childEnv(options.env), { extendEnv: false }),
      Command.stdin("pipe")
    )
    const proc = yield* executor.start(command).pipe(
      Effect.mapError((error) => new StartError({ reason: describeStartError(error, options) }))
    )

    let lastOutputAt = yield* Clock.currentTimeMillis
    const exited = yield* Deferred.make<ExitInfo>()
    const pending = new Map<string, Deferred.Deferred<unknown, ControlRequestFailed>>()
    const handlers = yield* FiberSet.make()
    const handlerFibers = new Map<string, Fiber.RuntimeFiber<void>>()
    const stdin = yield* Mailbox.make<Uint8Array>()

    // The one stdin writer. When the mailbox ends, the stream ends and stdin is closed (EOF). Lines are encoded
    // as they are sent: one stage per long-lived stream is what an idle agent keeps in memory.
    yield* Mailbox.toStream(stdin).pipe(Stream.run(proc.stdin), Effect.ignore, Effect.forkScoped)
    const encoder = new TextEncoder()
    /** Set once the child has exited: nothing more is written to it (a pipe with no reader can stall its writer). */
    let gone = false
    const write = (line: string) => {
      if (!gone) stdin.unsafeOffer(encoder.encode(line + "\n"))
    }
    const send = (line: string) => Effect.sync(() => write(line))

    // Stderr must always be read (an unread pipe blocks the child); its tail is kept, as bytes, and it is logged.
    const stderr = tailBuffer(STDERR_BYTES)
    const stderrText = new StringDecoder("utf8")
    const stderrDone = yield* proc.stderr.pipe(
      Stream.runForEachChunk((chunks) =>
        Effect.forEach(chunks, (chunk) => {
          stderr.push(chunk)
          return Effect.logDebug(stderrText.write(chunk))
        }, { discard: true })
      ),
      Effect.ignore,
      Effect.forkScoped
    )
    const stderrTail = () => stderr.lines(STDERR_LINES)

    const answer = (frame: Protocol.ControlRequestFrame) =>
      options.onControlRequest(frame.request).pipe(
        Effect.flatMap((outcome) =>
          send(
            outcome._tag === "Success"
              ? Protocol.controlSuccess(frame.request_id, outcome.response)
              : Protocol.controlError(frame.request_id, outcome.error)
          )
        ),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.void
            : send(Protocol.controlError(frame.request_id, `host failure: ${Cause.pretty(cause)}`))
        ),
        Effect.ensuring(Effect.sync(() => handlerFibers.delete(frame.request_id)))
      )

    const dispatch = (frame: Protocol.Frame): Effect.Effect<void> => {
      switch (frame._tag) {
        case "ControlResponse": {
          const deferred = pending.get(frame.frame.response.request_id)
          if (deferred === undefined) return Effect.void // an echo of our own answer, or a late one
          pending.delete(frame.frame.response.request_id)
          const response = frame.frame.response
          return response.subtype === "success"
            ? Deferred.succeed(deferred, response.response)
            : Deferred.fail(deferred, new ControlRequestFailed({ subtype: "", reason: response.error ?? "error" }))
        }
        case "ControlRequest":
          return FiberSet.run(handlers, answer(frame.frame)).pipe(
            Effect.tap((fiber) => Effect.sync(() => handlerFibers.set(frame.frame.request_id, fiber))),
            Effect.asVoid
          )
        case "ControlCancel": {
          const fiber = handlerFibers.get(frame.requestId)
          return fiber === undefined ? Effect.void : Fiber.interrupt(fiber).pipe(Effect.asVoid)
        }
        default:
          return Effect.void // turn frames never come here (see onChunk)
      }
    }

    // The one stdout reader. It works a chunk at a time: lines are split and frames decoded synchronously,
    // turn frames go straight to the agent, and only control traffic (rare) runs as effects.
    const decoder = new StringDecoder("utf8")
    let partial = ""
    /** Reads one chunk; returns the control traffic it held (usually none), to run as effects. */
    const onChunk = (chunk: Uint8Array, now: number, effects: Array<Effect.Effect<void>>) => {
      lastOutputAt = now
      const text = partial + decoder.write(chunk)
      let start = 0
      for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
        const line = text.charCodeAt(end - 1) === 13 /* \r */ ? text.slice(start, end - 1) : text.slice(start, end)
        start = end + 1
        const frame = Protocol.decodeLine(line)
        if (Option.isNone(frame)) {
          if (line.trim().length > 0) effects.push(Effect.logDebug("non-protocol stdout", line))
        } else if (isTurnFrame(frame.value)) {
          options.onFrame(frame.value, now)
        } else {
          effects.push(dispatch(frame.value))
        }
      }
      partial = start === 0 ? text : text.slice(start)
    }
    const onChunks = (chunks: Iterable<Uint8Array>, now: number): Effect.Effect<void> => {
      const effects: Array<Effect.Effect<void>> = []
      for (const chunk of chunks) onChunk(chunk, now, effects)
      return effects.length === 0 ? Effect.void : Effect.forEach(effects, (e) => e, { discard: true })
    }
    const clock = yield* Effect.clock
    yield* proc.stdout.pipe(
      Stream.runForEachChunk((chunks) => Effect.suspend(() => onChunks(chunks, clock.unsafeCurrentTimeMillis()))),
      // A last line without a newline still counts.
      Effect.zipRight(Effect.suspend(() => (partial.length > 0 ? onChunks([NEWLINE], lastOutputAt) : Effect.void))),
      Effect.ignore,
      // stdout has ended: wait for the exit code and for the stderr tail to be complete.
      Effect.zipRight(proc.exitCode.pipe(Effect.option)),
      Effect.tap(() => Fiber.join(stderrDone)),
      Effect.flatMap((code) => {
        const exit: ExitInfo = { exitCode: Option.getOrNull(code), stderr: stderrTail() }
        const failure = new ControlRequestFailed({ subtype: "", reason: "the claude process exited" })
        gone = true
        return Effect.forEach(pending.values(), (deferred) => Deferred.fail(deferred, failure)).pipe(
          Effect.zipRight(Deferred.succeed(exited, exit)),
          Effect.zipRight(Effect.sync(() => options.onExit(exit)))
        )
      }),
      Effect.forkScoped
    )

    const request = (body: Record<string, unknown> & { readonly subtype: string }) =>
      Effect.gen(function*() {
        if (yield* Deferred.isDone(exited)) {
          return yield* new ControlRequestFailed({ subtype: body.subtype, reason: "the claude process has exited" })
        }
        const id = nextRequestId()
        const deferred = yield* Deferred.make<unknown, ControlRequestFailed>()
        pending.set(id, deferred)
        yield* send(Protocol.controlRequest(id, body))
        return yield* Deferred.await(deferred).pipe(
          Effect.mapError((e) => new ControlRequestFailed({ subtype: body.subtype, reason: e.reason })),
          Effect.ensuring(Effect.sync(() => pending.delete(id)))
        )
      })

    const endInput = Effect.asVoid(stdin.end)

    // Runs before the platform's own finalizer (which sends SIGTERM and waits without a deadline).
    const eofGrace = options.eofGrace ?? "2 seconds"
    const termGrace = options.termGrace ?? "5 seconds"
    // Whoever still waits on this child (a pending control request, its exit) is released when it is stopped:
    // the reader that would have told them is interrupted with the scope.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        const stopped = new ControlRequestFailed({ subtype: "", reason: "the claude process was stopped" })
        yield* Effect.forEach(pending.values(), (deferred) => Deferred.fail(deferred, stopped), { discard: true })
        pending.clear()
        yield* Deferred.succeed(exited, { exitCode: null, stderr: stderrTail() })
      })
    )

    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        if (yield* Deferred.isDone(exited)) return
        yield* endInput
        const afterEof = yield* Deferred.await(exited).pipe(Effect.interruptible, Effect.timeoutOption(eofGrace))
        if (Option.isSome(afterEof)) return
        const afterTerm = yield* proc.kill("SIGTERM").pipe(Effect.interruptible, Effect.timeoutOption(termGrace))
        if (Option.isSome(afterTerm)) return
        yield* proc.kill("SIGKILL").pipe(Effect.interruptible, Effect.timeoutOption("2 seconds"))
      }).pipe(Effect.ignore)
    )

    return {
      pid: proc.pid,
      sendUser: (text: string) => write(Protocol.userFrame(text)),
      request,
      exited,
      lastOutputAt: () => lastOutputAt,
      stderrTail,
      endInput
    } satisfies ClaudeProcess
  }
)

const describeStartError = (error: unknown, options: StartOptions & { readonly executable: ClaudeExecutable }) => {
  const text = String(Predicate.hasProperty(error, "message") ? error.message : error)
  if (text.includes("ENOENT")) {
    return text.includes("access")
      ? `working directory ${options.cwd} does not exist`
      : `cannot execute ${options.executable.command}: not found (install @anthropic-ai/claude-code, ` +
        `set FLOTTA_CLAUDE_PATH, or put claude on PATH)`
  }
  if (text.includes("EACCES")) return `cannot execute ${options.executable.command}: permission denied`
  return text
}
