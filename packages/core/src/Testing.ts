/**
 * `@flotta/core/Testing`: the whole fleet with an in-memory Claude, for tests that run under `TestClock`.
 *
 * `Testing.layer(options)` provides `Flotta` and the rest of the engine's services exactly as `Flotta.layer`
 * does, but below `Agent` sits a scripted model instead of a `claude` process: the agent's queue, permission
 * handling, supervision, the report log and transcripts run unchanged on top of it. No process starts, and
 * every timer (a slow reply, the stall watchdog, timeouts, restart backoff) runs on the Effect `Clock`, so
 * `TestClock.adjust` drives them.
 *
 * The model is a function of `{ agent, prompt, history, turn }` returning a `Reply`: a plain string, or one
 * of `toolUse`, `delay`, `apiError`, `crash`, `hang`, `structured`, and the rate limits `usageLimit`,
 * `rateLimited` and `usageWarning`. `history` holds every earlier prompt of the agent's conversation and survives
 * a crash and resume, as the real CLI's session file does.
 *
 * Sandboxed agents: the model sees the sandbox the process was started with (`sandbox`: where its commands may
 * write, which hosts they may reach, read back from its `--settings` as the CLI reads them), and the fleet's own
 * guard answers its Write, Edit and WebFetch calls as it does over the real CLI. `sandbox: "unavailable"` makes the
 * machine one where the sandbox cannot run: a sandboxed agent or run fails with `SandboxUnavailable`, never started.
 */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { Clock, Deferred, Duration, Effect, Fiber, Layer, Option, Queue, Scope } from "effect"
import { Approvals } from "./Approvals.js"
import type { ClaudeExecutable, ClaudeProcess, ExitInfo, StartOptions, TurnFrame } from "./ClaudeCli.js"
import { ClaudeCli, ControlRequestFailed } from "./ClaudeCli.js"
import type * as Protocol from "./ClaudeProtocol.js"
import type { SandboxUnavailable, StoreError } from "./Errors.js"
import type { FleetSettingsInput } from "./FleetConfig.js"
import * as Flotta from "./Flotta.js"
import { CONTINUATION } from "./Parking.js"
import { READ_ONLY_TOOLS } from "./Permission.js"
import * as Sandbox from "./Sandbox.js"
import { Store } from "./Store.js"

// ---------------------------------------------------------------------------------------------- replies

/** What the host decided about a tool call, as the model's next step sees it. */
export type ToolDecision =
  | { readonly behavior: "allow"; readonly input: Record<string, unknown> }
  | { readonly behavior: "deny"; readonly message: string }

/** One step of the scripted model. */
export type Reply =
  | string
  | { readonly _tag: "Structured"; readonly output: unknown; readonly text: string }
  | {
    readonly _tag: "ToolUse"
    readonly tool: string
    readonly input: Record<string, unknown>
    readonly then: Reply | ((decision: ToolDecision) => Reply)
  }
  | { readonly _tag: "Delay"; readonly duration: Duration.Duration; readonly reply: Reply }
  | { readonly _tag: "ApiError"; readonly status: number; readonly message: string }
  | { readonly _tag: "Crash"; readonly exitCode: number; readonly stderr: string }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "UsageLimit"; readonly resetIn: Duration.Duration | null; readonly rateLimitType: string }
  | { readonly _tag: "RateLimited"; readonly throttle: boolean }
  | {
    readonly _tag: "UsageWarning"
    readonly utilization: number
    readonly rateLimitType: string
    readonly resetIn: Duration.Duration
    readonly reply: Reply
  }

/**
 * A tool call. It asks permission through the agent's real path (unless the agent's flags already allow the
 * tool, or do not offer it, as with the CLI), is recorded with its decision in the transcript, and the model
 * goes on with `then`: a reply, or a function of the decision.
 */
export const toolUse = (
  tool: string,
  input: Record<string, unknown> = {},
  then: Reply | ((decision: ToolDecision) => Reply) = (decision) =>
    decision.behavior === "allow" ? `${tool} done` : `${tool} refused: ${decision.message}`
): Reply => ({ _tag: "ToolUse", tool, input, then })

/** Silent for `duration` (Clock time), then `reply`: a slow model. The stall watchdog applies to it. */
export const delay = (duration: Duration.DurationInput, reply: Reply): Reply => ({
  _tag: "Delay",
  duration: Duration.decode(duration),
  reply
})

/** The API answers with an HTTP error: the turn fails as `TurnFailed` with that status. */
export const apiError = (status: number, message = `the API answered ${status}`): Reply => ({
  _tag: "ApiError",
  status,
  message
})

/** The process dies mid-turn: `AgentCrashed`, then a restart with `--resume`. */
export const crash = (options: { readonly exitCode?: number; readonly stderr?: string } = {}): Reply => ({
  _tag: "Crash",
  exitCode: options.exitCode ?? 1,
  stderr: options.stderr ?? "in-memory claude: simulated crash"
})

/** No output at all: the stall watchdog and timeouts apply (an interrupt still ends the turn). */
export const hang = (): Reply => ({ _tag: "Hang" })

/**
 * The account's usage limit, as the CLI reports it for a subscription login (CLAUDE-CLI.md, "Usage limits"): a
 * `rate_limit_event` (`rejected`, reset `resetIn` from now; `null`: no reset time), its own message with
 * `api_error: "usage_limit_reached"`, and an API-error result. Like the CLI, the process keeps the prompt and
 * merges it into the next user message: when that is the fleet's continuation, the model is asked the kept
 * prompt again, with `resumed: true`.
 */
export const usageLimit = (
  options: { readonly resetIn?: Duration.DurationInput | null; readonly rateLimitType?: string } = {}
): Reply => ({
  _tag: "UsageLimit",
  resetIn: options.resetIn === null ? null : Duration.decode(options.resetIn ?? "1 hour"),
  rateLimitType: options.rateLimitType ?? "five_hour"
})

/**
 * A 429 with no reset time: an API key's (the CLI reads no limit headers then), or with `throttle` a
 * subscription's "not your usage limit". The fleet backs off on its own; the prompt is kept, as above.
 */
export const rateLimited = (options: { readonly throttle?: boolean } = {}): Reply => ({
  _tag: "RateLimited",
  throttle: options.throttle === true
})

/** `reply`, with the limiter's `allowed_warning` (past a warning threshold of its window) on the way. */
export const usageWarning = (
  reply: Reply,
  options: {
    readonly utilization?: number
    readonly rateLimitType?: string
    readonly resetIn?: Duration.DurationInput
  } = {}
): Reply => ({
  _tag: "UsageWarning",
  utilization: options.utilization ?? 0.92,
  rateLimitType: options.rateLimitType ?? "five_hour",
  resetIn: Duration.decode(options.resetIn ?? "4 hours"),
  reply
})

const WINDOWS: Readonly<Record<string, string>> = { five_hour: "5-hour", seven_day: "weekly" }

/** Structured output, as the CLI gives it under `--json-schema` (a run's `jsonSchema`). */
export const structured = (output: unknown, text = "Done."): Reply => ({ _tag: "Structured", output, text })

// ---------------------------------------------------------------------------------------------- options

export interface ModelInput {
  readonly agent: string
  /** This turn's prompt. */
  readonly prompt: string
  /** Every earlier prompt of this conversation, oldest first (it survives crash and resume). */
  readonly history: ReadonlyArray<string>
  /** This turn's number in the conversation, from 1. */
  readonly turn: number
  readonly sessionId: string
  /** The `--model` the agent was started with, if any. */
  readonly model: string | null
  /** The process's working directory (a run's worktree, say). */
  readonly cwd: string
  /**
   * This call continues a prompt the CLI kept at a usage limit (the fleet's continuation came): `prompt` is the
   * kept one.
   */
  readonly resumed: boolean
  /** The process's sandbox, when it runs sandboxed: what its commands could write and reach. */
  readonly sandbox: SandboxView | null
}

/** A sandbox as its process has it (from its `--settings`): where commands may write, which hosts they may reach. */
export interface SandboxView {
  /** Absolute: the working directory first. */
  readonly writable: ReadonlyArray<string>
  readonly hosts: ReadonlyArray<string>
}

export type Model = (input: ModelInput) => Reply

export interface Options extends FleetSettingsInput {
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
  /** Where the fleet's state lives (default: `Store.memory`, new per build). */
  readonly store?: Layer.Layer<Store, StoreError>
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

export const echo: Model = ({ prompt }) => `echo: ${prompt}`

const EXECUTABLE: ClaudeExecutable = { command: "in-memory claude", prefixArgs: [], source: "memory" }

// ---------------------------------------------------------------------------------------------- flags

interface Flags {
  readonly sessionId: string
  readonly resume: boolean
  readonly model: string | null
  /** `--tools`: the tools offered (undefined: all). */
  readonly tools: ReadonlyArray<string> | undefined
  readonly allowedTools: ReadonlyArray<string>
  readonly maxTurns: number | undefined
  readonly maxBudgetUsd: number | undefined
  readonly jsonSchema: boolean
  /** `--settings`'s sandbox, when it turns the sandbox on (writable paths without the cwd). */
  readonly sandbox: { readonly allowWrite: ReadonlyArray<string>; readonly hosts: ReadonlyArray<string> } | null
}

const strings = (value: unknown): ReadonlyArray<string> =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : []

/** The sandbox a `--settings` value turns on, read as the CLI reads it. */
const sandboxOf = (settings: string | undefined): Flags["sandbox"] => {
  if (settings === undefined) return null
  try {
    const sandbox = (JSON.parse(settings) as {
      readonly sandbox?: {
        readonly enabled?: unknown
        readonly filesystem?: { readonly allowWrite?: unknown }
        readonly network?: { readonly allowedDomains?: unknown }
      }
    }).sandbox
    if (sandbox?.enabled !== true) return null
    return { allowWrite: strings(sandbox.filesystem?.allowWrite), hosts: strings(sandbox.network?.allowedDomains) }
  } catch {
    return null
  }
}

const list = (value: string | undefined) =>
  value === undefined ? [] : value.split(",").map((s) => s.trim()).filter((s) => s.length > 0)

/** The flags the in-memory CLI acts on (the rest are accepted and ignored, as many are by the real one). */
const parseFlags = (args: ReadonlyArray<string>): Flags => {
  const value = (flag: string) => {
    const i = args.lastIndexOf(flag)
    return i === -1 ? undefined : args[i + 1]
  }
  const resume = value("--resume")
  const tools = value("--tools")
  const maxTurns = value("--max-turns")
  const maxBudget = value("--max-budget-usd")
  return {
    sessionId: resume ?? value("--session-id") ?? "",
    resume: resume !== undefined,
    model: value("--model") ?? null,
    tools: tools === undefined ? undefined : list(tools),
    allowedTools: list(value("--allowedTools")),
    maxTurns: maxTurns === undefined ? undefined : Number(maxTurns),
    maxBudgetUsd: maxBudget === undefined ? undefined : Number(maxBudget),
    jsonSchema: args.includes("--json-schema"),
    sandbox: sandboxOf(value("--settings"))
  }
}

// ---------------------------------------------------------------------------------------------- a process

/** Conversations by session id: what the CLI keeps in its session files, so `--resume` finds them. */
type Sessions = Map<string, Array<string>>

let toolCounter = 0

const startProcess = (
  start: StartOptions,
  sessions: Sessions,
  options: Options
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
    /** The process's running cost, as the CLI reports it. */
    let cost = 0
    let turn: Fiber.RuntimeFiber<void> | undefined
    /** The host asked to interrupt the turn in flight. */
    let interrupting = false
    /** The host asked to interrupt a turn it had sent that had not started yet. */
    let interruptNext = false
    /** The prompt a rate limit refused: the CLI keeps it and merges it into the next user message. */
    let kept: string | undefined
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
    const startError = refused !== undefined
      ? refused
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
    const prompts = conversation ?? []

    /** One turn: the model's replies until a result, a crash or a hang. */
    const runTurn = (text: string) =>
      Effect.gen(function*() {
        const startedAt = yield* Clock.currentTimeMillis
        // The prompt a usage limit left behind is merged into this message: the continuation resumes it.
        const resumed = kept !== undefined && text === CONTINUATION
        const prompt = resumed ? kept! : text
        kept = undefined
        const history = resumed ? prompts.slice(0, -1) : [...prompts]
        if (!resumed) prompts.push(text)
        sessions.set(flags.sessionId, prompts)
        const costAtStart = cost
        let calls = 0
        const denials: Array<Protocol.PermissionDenial> = []
        const result = (fields: Partial<Protocol.ResultFrame> & { readonly subtype: string }) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) =>
            emit({
              _tag: "Result",
              frame: {
                type: "result",
                is_error: false,
                num_turns: calls,
                session_id: flags.sessionId,
                duration_ms: now - startedAt,
                total_cost_usd: cost,
                permission_denials: denials,
                usage: { input_tokens: 10 * calls, output_tokens: 5 * calls },
                ...fields
              }
            }))
        const assistant = (content: Protocol.AssistantFrame["message"]["content"]) =>
          emit({ _tag: "Assistant", frame: { type: "assistant", message: { content } } })
        /**
         * A 429, as the CLI reports it: its own message (a usage limit's with `info`), then an API-error result. The
         * process keeps the prompt, to merge into the next user message.
         */
        const refused = (message: string, info?: Protocol.RateLimitInfo) =>
          Effect.gen(function*() {
            const limit = info === undefined
              ? {}
              : { api_error: "usage_limit_reached", api_error_params: { rate_limit_info: info } }
            yield* emit({
              _tag: "Assistant",
              frame: {
                type: "assistant",
                message: { content: [{ type: "text", text: message }] },
                error: "rate_limit",
                ...limit
              }
            })
            kept = prompt
            return yield* result({
              subtype: "success",
              is_error: true,
              result: message,
              api_error_status: 429,
              api_error_type: "rate_limit_error",
              ...(info === undefined ? {} : { api_error: "usage_limit_reached" })
            })
          })
        /** One model round trip; false when a bound stops the turn (its result is then sent). */
        const call = Effect.suspend(() => {
          calls++
          cost += costPerCall
          if (flags.maxBudgetUsd !== undefined && cost - costAtStart > flags.maxBudgetUsd) {
            return Effect.as(result({ subtype: "error_max_budget_usd", is_error: true, errors: ["budget"] }), false)
          }
          return Effect.succeed(true)
        })

        yield* emit({
          _tag: "Init",
          frame: { type: "system", subtype: "init", session_id: flags.sessionId, model: flags.model ?? "memory" }
        })
        let reply: Reply = yield* Effect.try(() =>
          model({
            agent: start.name,
            prompt,
            history,
            turn: prompts.length,
            sessionId: flags.sessionId,
            model: flags.model,
            cwd: start.cwd,
            resumed,
            sandbox: flags.sandbox === null
              ? null
              : { writable: [start.cwd, ...flags.sandbox.allowWrite], hosts: flags.sandbox.hosts }
          })
        ).pipe(Effect.catchAll((error) => Effect.succeed(crash({ stderr: `the model threw: ${error.error}` }))))
        while (true) {
          if (typeof reply === "string") {
            if (!(yield* call)) return
            yield* assistant([{ type: "text", text: reply }])
            return yield* result({ subtype: "success", result: reply })
          }
          switch (reply._tag) {
            case "Structured": {
              if (!(yield* call)) return
              if (!flags.jsonSchema) {
                yield* assistant([{ type: "text", text: reply.text }])
                return yield* result({ subtype: "success", result: reply.text })
              }
              const id = `toolu_memory_${++toolCounter}`
              yield* assistant([{ type: "tool_use", id, name: "StructuredOutput", input: reply.output }])
              return yield* result({ subtype: "success", result: reply.text, structured_output: reply.output })
            }
            case "ToolUse": {
              if (!(yield* call)) return
              const id = `toolu_memory_${++toolCounter}`
              yield* assistant([{ type: "tool_use", id, name: reply.tool, input: reply.input }])
              if (flags.maxTurns !== undefined && calls >= flags.maxTurns) {
                return yield* result({ subtype: "error_max_turns", is_error: true, errors: ["max turns"] })
              }
              const decision = yield* decide(reply.tool, reply.input, id)
              if (decision.behavior === "deny") {
                denials.push({ tool_name: reply.tool, tool_use_id: id, tool_input: reply.input })
              }
              yield* emit({ _tag: "Other", type: "user" })
              reply = typeof reply.then === "function" ? reply.then(decision) : reply.then
              break
            }
            case "Delay": {
              yield* Effect.sleep(reply.duration)
              reply = reply.reply
              break
            }
            case "ApiError": {
              calls++
              const message = `API Error: ${reply.status} ${reply.message}`
              yield* assistant([{ type: "text", text: message }])
              return yield* result({
                subtype: "success",
                is_error: true,
                result: message,
                api_error_status: reply.status
              })
            }
            case "UsageLimit": {
              calls++
              const now = yield* Clock.currentTimeMillis
              const resetsAt = reply.resetIn === null
                ? undefined
                : Math.ceil((now + Duration.toMillis(reply.resetIn)) / 1000)
              const info: Protocol.RateLimitInfo = {
                status: "rejected",
                ...(resetsAt === undefined ? {} : { resetsAt }),
                rateLimitType: reply.rateLimitType
              }
              const message = `You've hit your ${WINDOWS[reply.rateLimitType] ?? reply.rateLimitType} limit` +
                (resetsAt === undefined ? "" : ` · resets ${new Date(resetsAt * 1000).toISOString()}`)
              yield* emit({ _tag: "RateLimit", frame: { type: "rate_limit_event", rate_limit_info: info } })
              return yield* refused(message, info)
            }
            case "RateLimited": {
              calls++
              return yield* refused(
                reply.throttle
                  ? "API Error: Server is temporarily limiting requests (not your usage limit) · Rate limited"
                  : "API Error: Request rejected (429) · Rate limited"
              )
            }
            case "UsageWarning": {
              const now = yield* Clock.currentTimeMillis
              yield* emit({
                _tag: "RateLimit",
                frame: {
                  type: "rate_limit_event",
                  rate_limit_info: {
                    status: "allowed_warning",
                    resetsAt: Math.ceil((now + Duration.toMillis(reply.resetIn)) / 1000),
                    rateLimitType: reply.rateLimitType,
                    utilization: reply.utilization,
                    surpassedThreshold: 0.9
                  }
                }
              })
              reply = reply.reply
              break
            }
            case "Crash":
              return yield* exit(reply.exitCode, reply.stderr)
            case "Hang":
              return yield* Effect.never
          }
        }
      }).pipe(
        // An interrupt ends the turn as the CLI does: an `error_during_execution` result.
        Effect.onInterrupt(() => (interrupting ? aborted : Effect.void))
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
          session_id: flags.sessionId,
          duration_ms: 0,
          total_cost_usd: cost,
          permission_denials: [],
          terminal_reason: "aborted_streaming"
        }
      })
    )

    /** The host's answer to a tool call: asked through `can_use_tool` unless the flags already decide it. */
    const decide = (
      tool: string,
      toolInput: Record<string, unknown>,
      toolUseId: string
    ): Effect.Effect<ToolDecision> =>
      Effect.gen(function*() {
        if (flags.tools !== undefined && !flags.tools.includes(tool)) {
          return { behavior: "deny", message: `No such tool available: ${tool}` }
        }
        if (flags.allowedTools.includes(tool) || READ_ONLY_TOOLS.includes(tool)) {
          return { behavior: "allow", input: toolInput }
        }
        const answer = yield* start.onControlRequest({
          subtype: "can_use_tool",
          tool_name: tool,
          input: toolInput,
          tool_use_id: toolUseId
        })
        if (answer._tag === "Error") return { behavior: "deny", message: answer.error }
        const response = answer.response as { behavior?: string; updatedInput?: unknown; message?: unknown }
        return response.behavior === "allow"
          ? {
            behavior: "allow",
            input: typeof response.updatedInput === "object" && response.updatedInput !== null
              ? response.updatedInput as Record<string, unknown>
              : toolInput
          }
          : { behavior: "deny", message: typeof response.message === "string" ? response.message : "denied" }
      })

    // The process's one reader of its input: turns in order, until input ends or the process dies.
    yield* Effect.gen(function*() {
      while (true) {
        const text = yield* Queue.take(input)
        if (text === null) return yield* exit(0, "")
        if (interruptNext) {
          // Interrupted before it started: the CLI keeps the prompt and ends the turn at once.
          interruptNext = false
          prompts.push(text)
          sessions.set(flags.sessionId, prompts)
          yield* aborted
          continue
        }
        turn = yield* Effect.fork(runTurn(text))
        yield* Fiber.await(turn)
        turn = undefined
        interrupting = false
        if (dead) return
      }
    }).pipe(Effect.forkScoped)

    // Closing the scope stops the process, as a kill would.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => (turn === undefined ? Effect.void : Fiber.interrupt(turn))).pipe(
        Effect.zipRight(exit(null, stderr, true))
      )
    )
    return process
  })

// ---------------------------------------------------------------------------------------------- layers

/** A pretend Linux machine without bubblewrap and socat: the sandbox cannot run. */
const NO_SANDBOX: Sandbox.Machine = { platform: "linux", path: "", isExecutable: () => false, osRelease: "ID=debian" }

/** The in-memory CLI alone: the seam below `Agent`, for composing the engine yourself. */
export const cli = (options: Options = {}): Layer.Layer<ClaudeCli> =>
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

/**
 * The fleet over the in-memory CLI: `Flotta`, `Runs`, `Registry`, `ReportLog` and `Permission`, as
 * `Flotta.layer` provides them. Options: the model, start failures and delay, cost, and the engine's settings.
 */
export const layer = (options: Options = {}) => {
  const {
    costPerCall: _cost,
    disk: _disk,
    failStart: _fail,
    model: _model,
    sandbox: _sandbox,
    startDelay: _delay,
    store,
    ...settings
  } = options
  return Flotta.services(cli(options), settings, Approvals.pendingDecisions, store ?? Store.memory).pipe(
    Layer.provide(NodeContext.layer)
  )
}
