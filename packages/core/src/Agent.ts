/**
 * One named agent: a scoped fiber that owns one `claude` child at a time. Turns wait in a FIFO queue and run
 * one at a time, because the CLI merges messages sent while it is busy. The agent keeps each turn's record,
 * answers the child's permission requests from its policy, and restarts a crashed or stalled child with
 * `--resume`, so the conversation survives.
 */
import { CommandExecutor } from "@effect/platform"
import {
  Clock,
  Deferred,
  Duration,
  Effect,
  Either,
  ExecutionStrategy,
  Exit,
  Fiber,
  Metric,
  Option,
  Queue,
  Scope,
  SubscriptionRef
} from "effect"
import { randomUUID } from "node:crypto"
import * as path from "node:path"
import * as ClaudeCli from "./ClaudeCli.js"
import * as Protocol from "./ClaudeProtocol.js"
import * as ClaudeSession from "./ClaudeSession.js"
import {
  AgentClosed,
  AgentCrashed,
  BudgetExceeded,
  InvalidSpec,
  MaxTurnsReached,
  NoResult,
  SpawnFailed,
  StructuredOutputMissing,
  TurnFailed,
  TurnInterrupted,
  TurnPending,
  TurnTimeout
} from "./Errors.js"
import type { TurnError } from "./Errors.js"
import type { FleetSettings } from "./FleetConfig.js"
import * as Permission from "./Permission.js"
import type { ReportLog } from "./ReportLog.js"
import * as Telemetry from "./Telemetry.js"

export type AgentStatus = "starting" | "idle" | "working" | "restarting" | "closed"
export type Role = "member" | "manager"

export interface AgentOptions {
  readonly cwd?: string
  readonly model?: string
  readonly permission?: Permission.Permission
  readonly systemPrompt?: string
  readonly appendSystemPrompt?: string
  /** Per-turn default (180 s unless the fleet says otherwise). */
  readonly timeout?: Duration.DurationInput
  /** Added to the inherited environment. */
  readonly env?: Readonly<Record<string, string>>
  readonly role?: Role
  /** Continue an earlier conversation (a session id from a run or another agent). */
  readonly resume?: string
  /** Further CLI flags, placed after the ones the options produce. */
  readonly extraArgs?: ReadonlyArray<string>
  /** A run takes one turn and does not report `turn_started` (default: session). */
  readonly lifecycle?: "session" | "run"
  /** A turn that succeeds without `structured_output` fails (the CLI can report success without it). */
  readonly expectStructuredOutput?: boolean
  /** Told what the agent is doing as its turns stream (a tool it calls, text it writes): for progress displays. */
  readonly onActivity?: (activity: Activity) => void
}

export type Activity =
  | { readonly _tag: "Text"; readonly turnId: string; readonly text: string }
  | { readonly _tag: "Tool"; readonly turnId: string; readonly tool: string; readonly input: unknown }

export interface TurnResult {
  readonly turnId: string
  readonly text: string
  /** This turn's own cost (the CLI reports a per-process running total). */
  readonly costUsd: number
  readonly durationMs: number
  /** Model round trips in this turn (a tool call makes two). */
  readonly modelCalls: number
  readonly sessionId: string
  readonly usage: Protocol.Usage
  readonly permissionDenials: ReadonlyArray<Protocol.PermissionDenial>
  /** The CLI's result subtype (`success`, `error_during_execution`, ...). */
  readonly subtype: string
  readonly structuredOutput?: unknown
}

export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly input: unknown
}

export interface PermissionRecord {
  readonly tool: string
  readonly input: unknown
  readonly decision: "allow" | "deny"
  readonly message?: string
  readonly updatedInput?: unknown
}

export interface TurnRecord {
  readonly turnId: string
  readonly prompt: string
  readonly status: "queued" | "running" | "succeeded" | "failed"
  readonly reply: string | null
  readonly error: { readonly _tag: string; readonly message: string } | null
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly permissions: ReadonlyArray<PermissionRecord>
  readonly costUsd: number
  readonly durationMs: number
  readonly modelCalls: number
  readonly enqueuedAt: string
  readonly startedAt: string | null
  readonly finishedAt: string | null
}

export interface AgentStatusView {
  readonly status: AgentStatus
  /** The turn in flight, if any. */
  readonly current: string | null
  /** When the turn in flight started (ISO), if any. */
  readonly currentStartedAt: string | null
  readonly queued: number
  /** Finished turns. */
  readonly turns: number
}

export interface AgentInfo {
  readonly name: string
  readonly status: AgentStatus
  readonly pid: number | null
  readonly sessionId: string
  readonly alive: boolean
  readonly cwd: string
  readonly model: string | null
  readonly permission: string | { readonly allow: ReadonlyArray<string> }
  readonly role: Role
  readonly current: string | null
  readonly queued: number
  readonly totals: { readonly turns: number; readonly failed: number; readonly costUsd: number }
  readonly restarts: number
  readonly startedAt: string
  readonly closedReason: string | null
}

export interface Agent {
  readonly name: string
  readonly prompt: (text: string, options?: { readonly timeout?: Duration.DurationInput }) => Effect.Effect<
    string,
    AgentClosed | InvalidSpec
  >
  /** Waits for a turn; interrupting the wait cancels the turn (dequeued, or interrupted if running). */
  readonly await: (turnId: string) => Effect.Effect<TurnResult, TurnError | NoResult>
  /** Waits for a turn like `await`, but interrupting the wait only stops the waiting: the turn goes on. */
  readonly watch: (turnId: string) => Effect.Effect<TurnResult, TurnError | NoResult>
  readonly result: (turnId: string) => Effect.Effect<TurnResult, TurnError | TurnPending | NoResult>
  readonly status: Effect.Effect<AgentStatusView>
  readonly info: Effect.Effect<AgentInfo>
  readonly transcript: Effect.Effect<ReadonlyArray<TurnRecord>>
  /** Interrupts the turn in flight; queued turns go on. False when nothing was running. */
  readonly interrupt: Effect.Effect<boolean>
  /** Stops the agent: its turns fail with AgentClosed, its child is stopped. */
  readonly shutdown: (reason: string) => Effect.Effect<void>
  readonly statusRef: SubscriptionRef.SubscriptionRef<AgentStatus>
}

export interface AgentDeps {
  readonly executable: ClaudeCli.ClaudeExecutable
  readonly executor: CommandExecutor.CommandExecutor
  readonly reports: ReportLog
  readonly settings: FleetSettings
  /** Admission: children starting at once. */
  readonly startPermit: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

type MutableRecord = {
  -readonly [K in keyof TurnRecord]: TurnRecord[K] extends ReadonlyArray<infer T> ? Array<T> : TurnRecord[K]
}

interface Turn {
  readonly _tag: "Turn"
  readonly id: string
  readonly text: string
  readonly timeoutMs: number
  /** A caller's own timeout is a deadline from the call, covering the wait in the queue too. */
  readonly deadlineAt: number | null
  readonly deferred: Deferred.Deferred<TurnResult, TurnError>
  readonly record: MutableRecord
  /** Why an interrupt was sent, so its `error_during_execution` result maps to the right error. */
  interruptReason: "user" | "timeout" | null
}

interface Process {
  readonly session: ClaudeSession.ClaudeSession
  readonly scope: Scope.CloseableScope
}

interface ProcessExited {
  readonly _tag: "ProcessExited"
  readonly session: ClaudeSession.ClaudeSession
  readonly exit: ClaudeSession.ExitInfo
}

type ProcessEnd =
  | { readonly _tag: "Exited"; readonly exit: ClaudeSession.ExitInfo }
  | { readonly _tag: "Stalled"; readonly reason: string }

const iso = (millis: number) => new Date(millis).toISOString()

const preview = (text: string, max = 200) => (text.length <= max ? text : text.slice(0, max) + "…")

const errorView = (error: { readonly _tag: string; readonly message: string }) => ({
  _tag: error._tag,
  message: error.message
})

/** The CLI flags for one agent's options. */
export const buildArgs = (
  options: AgentOptions,
  permission: Permission.Permission,
  session: { readonly id: string; readonly resume: boolean }
): ReadonlyArray<string> => [
  ...ClaudeCli.DUPLEX_FLAGS,
  ...(session.resume ? ["--resume", session.id] : ["--session-id", session.id]),
  ...(options.model === undefined ? [] : ["--model", options.model]),
  ...(options.systemPrompt === undefined ? [] : ["--system-prompt", options.systemPrompt]),
  ...(options.appendSystemPrompt === undefined ? [] : ["--append-system-prompt", options.appendSystemPrompt]),
  ...Permission.flags(permission),
  ...(options.extraArgs ?? [])
]

/**
 * Starts an agent in the current scope and returns once its child has answered `initialize`.
 * Closing the scope stops the child; `shutdown` also fails the agent's turns.
 */
export const make = (
  name: string,
  options: AgentOptions,
  deps: AgentDeps
): Effect.Effect<Agent, SpawnFailed, Scope.Scope> =>
  Effect.gen(function*() {
    const { reports, settings } = deps
    const agentScope = yield* Effect.scope
    const permission = options.permission ?? "read_only"
    const cwd = path.resolve(options.cwd ?? ".")
    const env = ClaudeCli.childEnv({ ...settings.env, ...options.env })
    const defaultTimeoutMs = Duration.toMillis(options.timeout ?? settings.turnTimeout)
    const startedAt = iso(yield* Clock.currentTimeMillis)
    const statusRef = yield* SubscriptionRef.make<AgentStatus>("starting")
    /** Turns, and the news that a child exited, in one queue: the idle agent waits on one thing, not a race. */
    const turns = yield* Queue.unbounded<Turn | ProcessExited>()
    /** Every turn still in history, oldest first; `waiting` holds the ones not yet taken by the agent. */
    const history = new Map<string, Turn>()
    const waiting = new Map<string, Turn>()
    /** Turn metrics carry the agent's name and the outcome (`ok` or the error's tag). */
    // Tagged once per agent (and outcome): tagging per update would miss Effect's metric cache every turn.
    const turnCounters = new Map<string, Metric.Metric.Counter<number>>()
    const countTurn = (outcome: string) => {
      let counter = turnCounters.get(outcome)
      if (counter === undefined) {
        counter = Telemetry.turnsTotal.pipe(Metric.tagged("agent", name), Metric.tagged("outcome", outcome))
        turnCounters.set(outcome, counter)
      }
      return Metric.increment(counter)
    }
    const turnDuration = Telemetry.turnDurationMs.pipe(Metric.tagged("agent", name))
    const costTotal = Telemetry.costUsdTotal.pipe(Metric.tagged("agent", name))

    let sessionId = options.resume ?? randomUUID()
    /** Whether the session has a saved transcript to resume (after the first turn, or when given one). */
    let resumable = options.resume !== undefined
    let current: Turn | undefined
    let proc: Process | undefined
    let processCost = 0
    let turnCounter = 0
    let finished = 0
    let failed = 0
    let totalCost = 0
    let closedReason: string | null = null
    const restarts: Array<number> = []

    const setStatus = (status: AgentStatus) => SubscriptionRef.set(statusRef, status)

    // --- permission requests from the child -------------------------------------------------------------
    const onControlRequest: ClaudeSession.ControlHandler = (request) => {
      const ask = Protocol.decodeCanUseTool(request)
      if (Option.isNone(ask)) {
        return Effect.succeed({ _tag: "Error", error: `flotta does not handle ${request.subtype} requests` })
      }
      const { input: rawInput, tool_name: tool } = ask.value
      const input = (typeof rawInput === "object" && rawInput !== null ? rawInput : {}) as Record<string, unknown>
      return Permission.decide(permission, tool, input).pipe(
        Effect.tap((decision) => {
          const record: PermissionRecord = decision.behavior === "allow"
            ? {
              tool,
              input,
              decision: "allow",
              ...(decision.updatedInput ? { updatedInput: decision.updatedInput } : {})
            }
            : { tool, input, decision: "deny", message: decision.message }
          current?.record.permissions.push(record)
          return reports.post(name, "permission", record, current?.id)
        }),
        Effect.map((decision) => ({
          _tag: "Success" as const,
          // The CLI takes `updatedInput` as the input to run; echo the original when the policy kept it.
          response: decision.behavior === "allow"
            ? { behavior: "allow", updatedInput: decision.updatedInput ?? input }
            : decision
        }))
      )
    }

    // --- starting a child ------------------------------------------------------------------------------
    const startProcess = (): Effect.Effect<Process, SpawnFailed> =>
      Effect.gen(function*() {
        const scope = yield* Scope.fork(agentScope, ExecutionStrategy.sequential)
        const args = buildArgs(options, permission, { id: sessionId, resume: resumable })
        const started = deps.startPermit(
          ClaudeSession.start({ executable: deps.executable, args, cwd, env, onControlRequest }).pipe(
            Effect.mapError((e) => new SpawnFailed({ name, reason: e.reason, exitCode: null, stderr: "" })),
            Effect.flatMap((session) => ready(session).pipe(Effect.as(session))),
            Scope.extend(scope),
            Effect.provideService(CommandExecutor.CommandExecutor, deps.executor)
          )
        )
        const session = yield* started.pipe(Effect.onError(() => Scope.close(scope, Exit.void)))
        yield* Deferred.await(session.exited).pipe(
          Effect.flatMap((exit) => Queue.offer(turns, { _tag: "ProcessExited", session, exit })),
          Effect.forkIn(scope)
        )
        return { session, scope }
      })

    /** Ready = `initialize` answered. The readiness deadline starts once the child has its start slot. */
    const ready = (session: ClaudeSession.ClaudeSession) =>
      session.request({ subtype: "initialize" }).pipe(
        Effect.timeoutFail({
          duration: settings.startTimeout,
          onTimeout: () => ({ timeout: true }) as const
        }),
        Effect.catchAll((error) =>
          Effect.gen(function*() {
            // Give the exit code and the last stderr lines a moment to arrive: they say why.
            const exit = yield* Deferred.await(session.exited).pipe(Effect.timeoutOption("1 second"))
            const reason = "timeout" in error
              ? `not ready after ${Duration.format(settings.startTimeout)} (no answer to initialize)`
              : Option.isSome(exit)
              ? "the claude process exited during start"
              : error.reason
            return yield* new SpawnFailed({
              name,
              reason,
              exitCode: Option.isSome(exit) ? exit.value.exitCode : null,
              stderr: Option.isSome(exit) ? exit.value.stderr : session.stderrTail()
            })
          })
        )
      )

    // --- one turn ----------------------------------------------------------------------------------------
    const fail = (turn: Turn, error: TurnError) =>
      Effect.gen(function*() {
        if (turn.record.status === "succeeded" || turn.record.status === "failed") return
        waiting.delete(turn.id)
        const now = yield* Clock.currentTimeMillis
        turn.record.status = "failed"
        turn.record.error = errorView(error)
        turn.record.finishedAt = iso(now)
        failed++
        yield* Deferred.fail(turn.deferred, error)
        yield* reports.post(name, "error", { error: errorView(error) }, turn.id)
        yield* countTurn(error._tag)
      })

    const finish = (turn: Turn, frame: Protocol.ResultFrame) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const costUsd = Math.max(0, frame.total_cost_usd - processCost)
        processCost = frame.total_cost_usd
        totalCost += costUsd
        if (frame.session_id.length > 0) sessionId = frame.session_id
        resumable = true
        const text = Protocol.resultText(frame)
        const result: TurnResult = {
          turnId: turn.id,
          text,
          costUsd,
          durationMs: frame.duration_ms,
          modelCalls: frame.num_turns,
          sessionId,
          usage: frame.usage ?? {},
          permissionDenials: frame.permission_denials,
          subtype: frame.is_error && frame.subtype === "success" ? "api_error" : frame.subtype,
          ...(frame.structured_output === undefined ? {} : { structuredOutput: frame.structured_output })
        }
        const record = turn.record
        record.reply = text
        record.costUsd = costUsd
        record.durationMs = frame.duration_ms
        record.modelCalls = frame.num_turns
        yield* Metric.update(turnDuration, frame.duration_ms)
        yield* Metric.incrementBy(costTotal, costUsd)
        const error = classify(turn, frame, result)
        if (error !== undefined) return yield* fail(turn, error)
        record.status = "succeeded"
        record.finishedAt = iso(now)
        finished++
        yield* Deferred.succeed(turn.deferred, result)
        yield* reports.post(name, "result", {
          text: preview(text),
          costUsd,
          durationMs: frame.duration_ms,
          modelCalls: frame.num_turns
        }, turn.id)
        yield* countTurn("ok")
      })

    const classify = (turn: Turn, frame: Protocol.ResultFrame, result: TurnResult): TurnError | undefined => {
      const base = { name, turnId: turn.id }
      const bound = { name, costUsd: result.costUsd, turns: frame.num_turns, sessionId }
      if (frame.subtype === "success" && !frame.is_error) {
        return options.expectStructuredOutput === true && frame.structured_output === undefined
          ? new StructuredOutputMissing({ name, sessionId, text: result.text })
          : undefined
      }
      if (frame.subtype === "success") {
        return new TurnFailed({
          ...base,
          status: frame.api_error_status ?? null,
          subtype: "api_error",
          reason: result.text
        })
      }
      if (frame.subtype === "error_during_execution" && turn.interruptReason === "timeout") {
        return new TurnTimeout({
          ...base,
          timeoutMs: turn.timeoutMs,
          costUsd: result.costUsd,
          turns: frame.num_turns,
          sessionId
        })
      }
      if (frame.subtype === "error_during_execution" && turn.interruptReason !== null) {
        return new TurnInterrupted(base)
      }
      if (frame.subtype === "error_max_turns") return new MaxTurnsReached(bound)
      if (frame.subtype === "error_max_budget_usd") return new BudgetExceeded(bound)
      if (frame.terminal_reason === "aborted_tools" || frame.terminal_reason === "aborted_streaming") {
        return new TurnInterrupted(base)
      }
      return new TurnFailed({ ...base, status: null, subtype: frame.subtype, reason: result.text || frame.subtype })
    }

    const sendInterrupt = (session: ClaudeSession.ClaudeSession) =>
      session.request({ subtype: "interrupt" }).pipe(
        Effect.timeout("5 seconds"),
        Effect.ignore,
        Effect.forkIn(agentScope)
      )

    /** Sends the turn and reads frames until its result, a crash, or a stall. */
    const runTurn = (session: ClaudeSession.ClaudeSession, turn: Turn): Effect.Effect<ProcessEnd | undefined> =>
      Effect.gen(function*() {
        const startedAt = yield* Clock.currentTimeMillis
        const stallMs = Duration.toMillis(settings.stallTimeout)
        const graceMs = Duration.toMillis(settings.interruptGrace)
        turn.record.status = "running"
        turn.record.startedAt = iso(startedAt)
        current = turn
        yield* setStatus("working")
        if (options.lifecycle !== "run") {
          yield* reports.post(name, "turn_started", { prompt: preview(turn.text) }, turn.id)
        }
        yield* session.send(Protocol.userFrame(turn.text))
        const deadline = turn.deadlineAt ?? startedAt + turn.timeoutMs
        let interruptedAt: number | null = null
        while (true) {
          if (turn.interruptReason !== null && interruptedAt === null) interruptedAt = yield* Clock.currentTimeMillis
          const now = yield* Clock.currentTimeMillis
          if (interruptedAt === null && now >= deadline) {
            // Checked on every frame too: a turn that keeps streaming past its deadline is still stopped.
            turn.interruptReason = "timeout"
            interruptedAt = now
            yield* sendInterrupt(session)
          }
          const stallAt = Math.max(session.lastOutputAt(), startedAt) + stallMs
          const wakeAt = Math.min(stallAt, interruptedAt === null ? deadline : interruptedAt + graceMs)
          // Frames usually wait in the queue already: take them without arming a timer.
          const queued = yield* Queue.poll(session.frames)
          const event = Option.isSome(queued) ? queued : yield* Queue.take(session.frames).pipe(
            Effect.timeoutOption(Duration.millis(Math.max(0, wakeAt - now)))
          )
          if (Option.isNone(event)) {
            const later = yield* Clock.currentTimeMillis
            if (interruptedAt === null && later >= deadline) {
              turn.interruptReason = "timeout"
              interruptedAt = later
              yield* sendInterrupt(session)
              continue
            }
            if (interruptedAt !== null && later >= interruptedAt + graceMs) {
              return { _tag: "Stalled", reason: `the turn did not end within ${graceMs} ms of its interrupt` } as const
            }
            if (later >= Math.max(session.lastOutputAt(), startedAt) + stallMs) {
              yield* sendInterrupt(session)
              return { _tag: "Stalled", reason: `no output for ${Duration.format(settings.stallTimeout)}` } as const
            }
            continue
          }
          const frame = event.value
          switch (frame._tag) {
            case "Init": {
              sessionId = frame.frame.session_id
              break
            }
            case "Assistant": {
              for (const block of frame.frame.message.content) {
                if (block.type === "tool_use" && block.name !== undefined) {
                  turn.record.toolCalls.push({ id: block.id ?? "", name: block.name, input: block.input ?? {} })
                  options.onActivity?.({ _tag: "Tool", turnId: turn.id, tool: block.name, input: block.input ?? {} })
                } else if (block.type === "text" && block.text !== undefined) {
                  options.onActivity?.({ _tag: "Text", turnId: turn.id, text: block.text })
                }
              }
              break
            }
            case "Result": {
              yield* finish(turn, frame.frame)
              return undefined
            }
            case "Exited":
              return { _tag: "Exited", exit: frame.exit } as const
          }
        }
      }).pipe(
        Effect.ensuring(Effect.sync(() => {
          current = undefined
        })),
        Effect.withSpan("flotta.turn", {
          attributes: { "flotta.agent": name, "flotta.turn": turn.id },
          captureStackTrace: false
        })
      )

    /** Serves turns on one child until it exits or stalls. */
    const serve = (session: ClaudeSession.ClaudeSession): Effect.Effect<{ end: ProcessEnd; turn: Turn | null }> =>
      Effect.gen(function*() {
        while (true) {
          yield* setStatus("idle")
          const turn = yield* Queue.take(turns)
          if (turn._tag === "ProcessExited") {
            if (turn.session !== session) continue // an earlier child's, already handled
            return { end: { _tag: "Exited", exit: turn.exit }, turn: null }
          }
          waiting.delete(turn.id)
          if (turn.record.status !== "queued") continue // cancelled while it waited
          if (turn.deadlineAt !== null && (yield* Clock.currentTimeMillis) >= turn.deadlineAt) {
            yield* fail(turn, new TurnTimeout({ name, turnId: turn.id, timeoutMs: turn.timeoutMs }))
            continue
          }
          const end = yield* runTurn(session, turn)
          if (end !== undefined) return { end, turn }
        }
      })

    const crashReason = (end: ProcessEnd) =>
      end._tag === "Stalled"
        ? `stalled: ${end.reason}`
        : `the claude process exited unexpectedly (exit code ${end.exit.exitCode ?? "none: killed by a signal"})`

    /** Crashes and restarts, with backoff and a restart budget; ends only when the agent gives up. */
    const supervise = (first: Process): Effect.Effect<void> =>
      Effect.gen(function*() {
        let running: Process = first
        while (true) {
          proc = running
          const { end, turn } = yield* serve(running.session)
          const stderr = end._tag === "Exited" ? end.exit.stderr : running.session.stderrTail()
          const exitCode = end._tag === "Exited" ? end.exit.exitCode : null
          yield* Scope.close(running.scope, Exit.void)
          proc = undefined
          processCost = 0
          let reason = crashReason(end)
          if (turn !== null) {
            yield* fail(turn, new AgentCrashed({ name, turnId: turn.id, exitCode, reason, stderr }))
          }
          yield* reports.post(name, "crashed", { reason, exitCode, stderr })
          // Restart until a child comes up or the restart budget is spent.
          while (true) {
            const now = yield* Clock.currentTimeMillis
            const windowMs = Duration.toMillis(settings.restartWindow)
            while (restarts.length > 0 && now - restarts[0]! >= windowMs) restarts.shift()
            if (restarts.length >= settings.maxRestarts) {
              return yield* giveUp(
                `restarted ${restarts.length} times in ${Duration.format(settings.restartWindow)}; last: ${reason}`
              )
            }
            restarts.push(now)
            yield* setStatus("restarting")
            const backoff = Math.min(
              Duration.toMillis(settings.restartBackoff) * 2 ** (restarts.length - 1),
              Duration.toMillis(settings.restartBackoffMax)
            )
            yield* Effect.sleep(Duration.millis(backoff))
            const next = yield* Effect.either(startProcess())
            if (Either.isRight(next)) {
              running = next.right
              yield* reports.post(name, "restarted", { pid: running.session.pid, sessionId, attempt: restarts.length })
              break
            }
            reason = next.left.message
            yield* reports.post(name, "crashed", { reason, exitCode: next.left.exitCode, stderr: next.left.stderr })
          }
        }
      })

    const failWaiting = (error: AgentClosed) =>
      Effect.gen(function*() {
        yield* Queue.takeAll(turns) // every queued turn is also in `waiting`
        for (const turn of [...waiting.values()]) yield* fail(turn, error)
      })

    const giveUp = (reason: string) =>
      Effect.gen(function*() {
        closedReason = reason
        yield* setStatus("closed")
        yield* failWaiting(new AgentClosed({ name, reason }))
        yield* reports.post(name, "closed", { reason })
      })

    // --- start ---------------------------------------------------------------------------------------------
    const first = yield* startProcess()
    yield* reports.post(name, "spawned", {
      pid: first.session.pid,
      sessionId,
      cwd,
      model: options.model ?? null,
      permission: Permission.describe(permission),
      role: options.role ?? "member",
      lifecycle: options.lifecycle ?? "session"
    })
    proc = first
    yield* setStatus("idle")
    const supervisor = yield* supervise(first).pipe(Effect.annotateLogs({ agent: name }), Effect.forkIn(agentScope))

    // --- the handle -----------------------------------------------------------------------------------------
    const isDone = (turn: Turn) => turn.record.status === "succeeded" || turn.record.status === "failed"

    const prune = () => {
      for (const [id, turn] of history) {
        if (history.size <= settings.historyLimit) break
        if (isDone(turn)) history.delete(id)
      }
    }

    const prompt: Agent["prompt"] = (text, opts) =>
      Effect.gen(function*() {
        if (closedReason !== null) return yield* new AgentClosed({ name, reason: closedReason })
        if (typeof text !== "string" || text.trim().length === 0) {
          return yield* new InvalidSpec({ path: "text", reason: "a prompt must be a non-empty string" })
        }
        const timeoutMs = opts?.timeout === undefined ? defaultTimeoutMs : Duration.toMillis(opts.timeout)
        if (!(timeoutMs > 0)) {
          return yield* new InvalidSpec({ path: "timeout", reason: "a timeout must be a positive duration" })
        }
        const now = yield* Clock.currentTimeMillis
        const id = `t${++turnCounter}`
        const record: MutableRecord = {
          turnId: id,
          prompt: text,
          status: "queued",
          reply: null,
          error: null,
          toolCalls: [],
          permissions: [],
          costUsd: 0,
          durationMs: 0,
          modelCalls: 0,
          enqueuedAt: iso(now),
          startedAt: null,
          finishedAt: null
        }
        const turn: Turn = {
          _tag: "Turn",
          id,
          text,
          timeoutMs,
          deadlineAt: opts?.timeout === undefined ? null : now + timeoutMs,
          deferred: yield* Deferred.make<TurnResult, TurnError>(),
          record,
          interruptReason: null
        }
        history.set(id, turn)
        waiting.set(id, turn)
        prune()
        yield* Queue.offer(turns, turn)
        return id
      })

    const interruptTurn = (turn: Turn, reason: "user" | "timeout") =>
      Effect.gen(function*() {
        if (current !== turn || proc === undefined || turn.interruptReason !== null) return false
        turn.interruptReason = reason
        yield* sendInterrupt(proc.session)
        return true
      })

    /** Cancels a turn someone stopped waiting for: drop it if queued, interrupt it if running. */
    const cancel = (turnId: string) =>
      Effect.gen(function*() {
        const turn = history.get(turnId)
        if (turn === undefined || isDone(turn)) return
        if (current === turn) {
          yield* interruptTurn(turn, "user")
          return
        }
        waiting.delete(turnId)
        yield* fail(turn, new TurnInterrupted({ name, turnId }))
      })

    /** A turn's outcome. At its deadline a turn still queued expires here; the agent interrupts a running one. */
    const outcomeOf = (turn: Turn): Effect.Effect<TurnResult, TurnError> => {
      const outcome = Deferred.await(turn.deferred)
      if (turn.deadlineAt === null) return outcome
      return Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) =>
          outcome.pipe(Effect.timeoutOption(Duration.millis(Math.max(0, turn.deadlineAt! - now))))
        ),
        Effect.flatMap(Option.match({
          onSome: Effect.succeed,
          onNone: () =>
            (turn.record.status === "queued"
              ? fail(turn, new TurnTimeout({ name, turnId: turn.id, timeoutMs: turn.timeoutMs }))
              : Effect.void).pipe(Effect.zipRight(outcome))
        }))
      )
    }

    const watch: Agent["watch"] = (turnId) =>
      Effect.suspend((): Effect.Effect<TurnResult, TurnError | NoResult> => {
        const turn = history.get(turnId)
        return turn === undefined ? new NoResult({ name, turnId }) : outcomeOf(turn)
      })

    const awaitTurn: Agent["await"] = (turnId) => watch(turnId).pipe(Effect.onInterrupt(() => cancel(turnId)))

    const result: Agent["result"] = (turnId) =>
      Effect.suspend((): Effect.Effect<TurnResult, TurnError | TurnPending | NoResult> => {
        const turn = turnId === "latest" ? [...history.values()].reverse().find(isDone) : history.get(turnId)
        if (turn === undefined) return new NoResult({ name, turnId })
        const { status } = turn.record
        if (status === "queued" || status === "running") return new TurnPending({ name, turnId: turn.id, status })
        return Deferred.await(turn.deferred)
      })

    const status = Effect.gen(function*() {
      // `waiting` (not the queue) counts a turn until the agent has taken it and made it current.
      const queued = waiting.size
      const state = yield* SubscriptionRef.get(statusRef)
      return {
        // A queued turn on an idle agent is about to start: report the work, not the gap between turns.
        status: state === "idle" && queued > 0 ? "working" : state,
        current: current?.id ?? null,
        currentStartedAt: current?.record.startedAt ?? null,
        queued,
        turns: finished + failed
      } satisfies AgentStatusView
    })

    const info = Effect.gen(function*() {
      const view = yield* status
      return {
        name,
        status: view.status,
        pid: proc?.session.pid ?? null,
        sessionId,
        alive: proc !== undefined,
        cwd,
        model: options.model ?? null,
        permission: Permission.describe(permission),
        role: options.role ?? "member",
        current: view.current,
        queued: view.queued,
        totals: { turns: finished + failed, failed, costUsd: totalCost },
        restarts: restarts.length,
        startedAt,
        closedReason
      } satisfies AgentInfo
    })

    const transcript = Effect.sync(() =>
      [...history.values()].map((turn) => structuredClone(turn.record) as TurnRecord)
    )

    const interrupt = Effect.suspend(
      () => (current === undefined ? Effect.succeed(false) : interruptTurn(current, "user"))
    )

    const shutdown = (reason: string) =>
      Effect.gen(function*() {
        if (closedReason === null) closedReason = reason
        const inFlight = current // read before the interrupt: the turn clears it as it unwinds
        yield* Fiber.interrupt(supervisor)
        if (inFlight !== undefined) waiting.set(inFlight.id, inFlight)
        yield* failWaiting(new AgentClosed({ name, reason: closedReason }))
        yield* setStatus("closed")
      })

    return {
      name,
      prompt,
      await: awaitTurn,
      watch,
      result,
      status,
      info,
      transcript,
      interrupt,
      shutdown,
      statusRef
    } satisfies Agent
  })
