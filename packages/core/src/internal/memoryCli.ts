/**
 * The in-memory CLI of `@flotta/core/Testing`: the `ClaudeCli` seam implemented without a process. Each "process"
 * reads its flags, keeps its conversation in a `Disk` of session files (so `--resume` finds it), answers the
 * control requests the agent sends (`initialize`, `interrupt`), and acts out the scripted model's replies one turn
 * at a time (`memoryTurn`), all on the Effect `Clock`.
 */
import { Clock, Deferred, Duration, Effect, Fiber, Layer, Option, Queue } from "effect"
import type { Scope } from "effect"
import { ClaudeCli } from "../ClaudeCli.js"
import type { ClaudeExecutable, ClaudeProcess, ExitInfo, StartOptions, TurnFrame } from "../ClaudeProcess.js"
import { ControlRequestFailed } from "../ClaudeProcess.js"
import type { SandboxUnavailable } from "../Errors.js"
import * as Sandbox from "../Sandbox.js"
import { parseFlags } from "./memoryFlags.js"
import { DEFAULT_CONTEXT_WINDOW } from "./memorySession.js"
import type { Sessions, TurnContext } from "./memoryTurn.js"
import { promptsUpTo, runTurn } from "./memoryTurn.js"
import type { Model } from "./scriptedModel.js"
import { echo } from "./scriptedModel.js"

/** What the in-memory CLI is told: its model, how its processes start, what they cost. */
export interface CliOptions {
  /** The scripted model (default: `echo: <prompt>`). */
  readonly model?: Model
  /** Make a process fail at start (`SpawnFailed`): return the stderr it dies with, or nothing to start. */
  readonly failStart?: (start: { readonly agent: string; readonly resume: boolean }) => string | undefined
  /** How long a process takes to become ready, on the Clock (default: no time). */
  readonly startDelay?: Duration.DurationInput
  /** What each model call costs, in dollars (default 0.001). */
  readonly costPerCall?: number
  /**
   * Where conversations are kept, as the CLI's session files are on disk (default: a new one per layer). Give
   * two builds the same disk, and the same `store`, to show a restart of the host: `Testing.disk()`.
   */
  readonly disk?: Disk
  /** The model's context window, in tokens (default 200,000): how full an agent's context is, against it. */
  readonly contextWindow?: number
  /**
   * A full disk for these agents: as their process exits, the CLI says its session file could not be written
   * (`session_writes_lost`, `ENOSPC`).
   */
  readonly diskFull?: (process: { readonly agent: string }) => boolean
  /**
   * Whether the CLI's sandbox can run on this (pretend) machine (default `"available"`). `"unavailable"`: as on a
   * Linux host without bubblewrap and socat, a sandboxed agent or run fails with `SandboxUnavailable`.
   */
  readonly sandbox?: "available" | "unavailable"
}

/** The in-memory CLI's session files: each session's prompts, oldest first. */
export type Disk = Map<string, Array<string>>

/** A new, empty disk of session files, to share between builds. */
export const disk = (): Disk => new Map()

const EXECUTABLE: ClaudeExecutable = { command: "in-memory claude", prefixArgs: [], source: "memory" }

const startProcess = (
  start: StartOptions,
  sessions: Sessions,
  options: CliOptions
): Effect.Effect<ClaudeProcess, never, Scope.Scope> =>
  Effect.gen(function*() {
    const flags = parseFlags(start.args)
    const model = options.model ?? echo
    const costPerCall = options.costPerCall ?? 0.001
    const startDelay = Duration.decode(options.startDelay ?? Duration.zero)
    const exited = yield* Deferred.make<ExitInfo>()
    const input = yield* Queue.unbounded<string | null>()
    let lastOutputAt = yield* Clock.currentTimeMillis
    let stderr = ""
    /** The process's running cost, and the prompt a rate limit refused (the CLI keeps it for the next message). */
    const state: TurnContext["state"] = { cost: 0, kept: undefined }
    let turn: Fiber.RuntimeFiber<void> | undefined
    /** The host asked to interrupt the turn in flight. */
    let interrupting = false
    /** The host asked to interrupt a turn it had sent that had not started yet. */
    let interruptNext = false
    let dead = false

    const emit = (frame: TurnFrame) =>
      Effect.clockWith((clock) =>
        Effect.sync(() => {
          lastOutputAt = clock.unsafeCurrentTimeMillis()
          start.onFrame(frame, lastOutputAt)
        })
      )

    /** The process ends; the agent is told unless it was the agent that stopped it (`stopped`). */
    const exit = (exitCode: number | null, text: string, stopped = false) =>
      Effect.suspend(() => {
        if (dead) return Effect.void
        dead = true
        stderr = text
        const info: ExitInfo = { exitCode, stderr: text }
        return Deferred.succeed(exited, info).pipe(
          Effect.zipRight(Effect.sync(() => (stopped ? undefined : start.onExit(info))))
        )
      })

    const process: ClaudeProcess = {
      pid: null,
      sendUser: (text) => {
        input.unsafeOffer(text)
      },
      request: (body) =>
        Effect.suspend(() => {
          if (dead) {
            return new ControlRequestFailed({ subtype: body.subtype, reason: "the claude process has exited" })
          }
          switch (body.subtype) {
            case "initialize":
              // Answered after the start delay, unless the process dies first (as a pending request would fail).
              return Duration.isZero(startDelay) ? Effect.succeed({}) : Effect.raceFirst(
                Effect.as(Effect.sleep(startDelay), {}),
                Effect.zipRight(
                  Deferred.await(exited),
                  new ControlRequestFailed({ subtype: body.subtype, reason: "the claude process exited" })
                )
              )
            case "interrupt": {
              const running = turn
              if (running === undefined) {
                // Sent right after a user frame, it still ends that turn (as with the CLI): it starts interrupted.
                if (Option.getOrElse(input.unsafeSize(), () => 0) > 0) interruptNext = true
                return Effect.succeed({})
              }
              interrupting = true
              return Effect.as(Fiber.interrupt(running), {})
            }
            default:
              return new ControlRequestFailed({ subtype: body.subtype, reason: "unsupported in memory" })
          }
        }),
      exited,
      lastOutputAt: () => lastOutputAt,
      stderrTail: () => stderr,
      endInput: Effect.asVoid(Queue.offer(input, null))
    }

    // A start that fails, as the CLI would: it dies before answering `initialize`.
    const refused = options.failStart?.({ agent: start.name, resume: flags.resume })
    const conversation = sessions.get(flags.sessionId)
    // A fork starts with its source's conversation, cut after the message it names.
    const fork = flags.fork
    const source = fork === null ? undefined : sessions.get(fork.sessionId)
    const kept = fork?.at === undefined ? source?.length : promptsUpTo(fork.at)
    const startError = refused !== undefined
      ? refused
      : fork !== null && source === undefined
      ? `No conversation found with session ID: ${fork.sessionId}`
      : fork?.at !== undefined && (kept === undefined || kept > source!.length)
      ? `No message found with message.uuid of: ${fork.at}`
      : flags.resume && conversation === undefined
      ? `No conversation found with session ID: ${flags.sessionId}`
      : !flags.resume && conversation !== undefined
      ? `Error: Session ID ${flags.sessionId} is already in use.`
      : undefined
    if (startError !== undefined) {
      yield* exit(1, startError)
      return process
    }
    // Like the CLI's session file, the conversation exists from its first message on.
    const session = {
      id: flags.sessionId,
      prompts: source !== undefined ? source.slice(0, kept) : conversation ?? []
    }
    const context: TurnContext = {
      start,
      flags,
      model,
      costPerCall,
      sessions,
      session,
      contextWindow: options.contextWindow ?? DEFAULT_CONTEXT_WINDOW,
      state,
      emit,
      exit
    }

    // A full disk (`diskFull`): as the CLI exits, it says that its session file could not be written.
    const lostWrites = Effect.suspend(() =>
      options.diskFull?.({ agent: start.name }) === true
        ? emit({
          _tag: "WritesLost",
          frame: {
            type: "system",
            subtype: "session_writes_lost",
            error_code: "ENOSPC",
            lost: ["transcript"],
            transcript_session_ids: [session.id]
          }
        })
        : Effect.void
    )

    const aborted = Effect.suspend(() =>
      emit({
        _tag: "Result",
        frame: {
          type: "result",
          subtype: "error_during_execution",
          is_error: true,
          errors: ["[Request interrupted by user]"],
          num_turns: 0,
          session_id: session.id,
          duration_ms: 0,
          total_cost_usd: state.cost,
          permission_denials: [],
          terminal_reason: "aborted_streaming"
        }
      })
    )

    // The process's one reader of its input: turns in order, until input ends or the process dies.
    yield* Effect.gen(function*() {
      while (true) {
        const text = yield* Queue.take(input)
        if (text === null) return yield* Effect.zipRight(lostWrites, exit(0, ""))
        if (interruptNext) {
          // Interrupted before it started: the CLI keeps the prompt and ends the turn at once.
          interruptNext = false
          session.prompts.push(text)
          sessions.set(session.id, session.prompts)
          yield* aborted
          continue
        }
        turn = yield* Effect.fork(
          runTurn(context, text).pipe(
            // An interrupt ends the turn as the CLI does: an `error_during_execution` result.
            Effect.onInterrupt(() => (interrupting ? aborted : Effect.void))
          )
        )
        yield* Fiber.await(turn)
        turn = undefined
        interrupting = false
        if (dead) return
      }
    }).pipe(Effect.forkScoped)

    // Closing the scope stops the process, as a kill would (after EOF, as the fleet closes it).
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => (turn === undefined ? Effect.void : Fiber.interrupt(turn))).pipe(
        Effect.zipRight(dead ? Effect.void : lostWrites),
        Effect.zipRight(exit(null, stderr, true))
      )
    )
    return process
  })

/** A pretend Linux machine without bubblewrap and socat: the sandbox cannot run. */
const NO_SANDBOX: Sandbox.Machine = { platform: "linux", path: "", isExecutable: () => false, osRelease: "ID=debian" }

/** The in-memory CLI alone: the seam below `Agent`, for composing the engine yourself. */
export const cli = (options: CliOptions = {}): Layer.Layer<ClaudeCli> =>
  Layer.sync(ClaudeCli, () => {
    const sessions: Sessions = options.disk ?? new Map()
    const checkSandbox = (name: string): Effect.Effect<void, SandboxUnavailable> =>
      options.sandbox === "unavailable" ? Sandbox.check(name, NO_SANDBOX) : Effect.void
    return {
      executable: EXECUTABLE,
      checkSandbox,
      start: (start: StartOptions) =>
        Effect.zipRight(
          start.sandboxed === true ? checkSandbox(start.name) : Effect.void,
          startProcess(start, sessions, options)
        )
    }
  })
