/**
 * One turn's execution: the user frame goes out, the process's frames come back until exactly one `result`,
 * and the turn ends with its `TurnResult` or a typed error, recorded in the transcript and the report log. A
 * turn past its deadline, or whose process falls silent, is interrupted; one that does not end after its
 * interrupt, or whose process dies, ends the process's service (the supervisor restarts it).
 *
 * The hot path is lean on purpose: frames are handled synchronously as the process's reader sees them
 * (`onFrame`), the result completes the caller's `Deferred` on the spot, report entries and metrics are
 * written without an effect each, and one watchdog fiber per turn keeps its deadlines.
 */
import { Deferred, Duration, Effect, Exit, MetricLabel } from "effect"
import type { AgentContext, PermissionRecord, TurnRecord } from "./Agent.js"
import type { ClaudeProcess, ExitInfo, TurnFrame } from "./ClaudeCli.js"
import type * as Protocol from "./ClaudeProtocol.js"
import type { TurnError } from "./Errors.js"
import type * as Telemetry from "./Telemetry.js"
import * as TurnOutcome from "./TurnOutcome.js"

/** A transcript record the agent fills in as the turn runs. */
export type MutableRecord = {
  -readonly [K in keyof TurnRecord]: TurnRecord[K] extends ReadonlyArray<infer T> ? Array<T> : TurnRecord[K]
}

export interface Turn {
  readonly _tag: "Turn"
  readonly id: string
  readonly text: string
  readonly timeoutMs: number
  /** A caller's own timeout is a deadline from the call, covering the wait in the queue too. */
  readonly deadlineAt: number | null
  readonly deferred: Deferred.Deferred<TurnOutcome.TurnResult, TurnError>
  readonly record: MutableRecord
  /** Why an interrupt was sent, so its `error_during_execution` result maps to the right error. */
  interruptReason: "user" | "timeout" | null
}

/** Why a process stopped serving turns. */
export type ProcessEnd =
  | { readonly _tag: "Exited"; readonly exit: ExitInfo }
  | { readonly _tag: "Stalled"; readonly reason: string }

/** The turn in flight on one process. */
export interface Active {
  readonly turn: Turn
  readonly process: ClaudeProcess
  /** Which of the agent's processes runs it: frames of another are not this turn's. */
  readonly generation: number
  readonly startedAt: number
  readonly deadline: number
  /** Completed when the turn is over for its process: `undefined` (its result came), or why the process ended. */
  readonly ended: Deferred.Deferred<ProcessEnd | undefined>
  interruptedAt: number | null
  /** Cancels the turn's pending alarm (its next check). */
  cancelAlarm: () => void
}

export const iso = (millis: number) => new Date(millis).toISOString()

export const preview = (text: string, max = 200) => (text.length <= max ? text : text.slice(0, max) + "…")

export const errorView = (error: { readonly _tag: string; readonly message: string }) => ({
  _tag: error._tag,
  message: error.message
})

export const isDone = (turn: Turn) => turn.record.status === "succeeded" || turn.record.status === "failed"

/** A new queued turn (its Deferred belongs to `fiberId`'s fiber). */
export const make = (
  id: string,
  text: string,
  timeoutMs: number,
  deadlineAt: number | null,
  now: number,
  deferred: Deferred.Deferred<TurnOutcome.TurnResult, TurnError>
): Turn => ({
  _tag: "Turn",
  id,
  text,
  timeoutMs,
  deadlineAt,
  deferred,
  record: {
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
  },
  interruptReason: null
})

/** Ends a turn with a typed error (once): transcript, waiters, report log, metrics. */
export const unsafeFail = (ctx: AgentContext, turn: Turn, error: TurnError, now: number) => {
  if (isDone(turn)) return
  ctx.waiting.delete(turn.id)
  turn.record.status = "failed"
  turn.record.error = errorView(error)
  turn.record.finishedAt = iso(now)
  ctx.state.failed++
  Deferred.unsafeDone(turn.deferred, Exit.fail(error))
  ctx.reports.unsafePost(ctx.name, "error", { error: errorView(error) }, turn.id, now)
  ctx.metrics.count(error._tag)
}

export const fail = (ctx: AgentContext, turn: Turn, error: TurnError) =>
  Effect.clockWith((clock) => Effect.sync(() => unsafeFail(ctx, turn, error, clock.unsafeCurrentTimeMillis())))

/** Ends a turn with its `result` frame: a success, or the typed error the frame means. */
const finish = (ctx: AgentContext, turn: Turn, frame: Protocol.ResultFrame, now: number) => {
  const { state } = ctx
  const facts: TurnOutcome.TurnFacts = {
    name: ctx.name,
    turnId: turn.id,
    sessionId: state.sessionId,
    costBefore: state.processCost,
    interruptReason: turn.interruptReason,
    timeoutMs: turn.timeoutMs,
    expectStructuredOutput: ctx.options.expectStructuredOutput === true
  }
  const result = TurnOutcome.resultOf(frame, facts)
  state.processCost = frame.total_cost_usd
  state.totalCost += result.costUsd
  state.sessionId = result.sessionId
  state.resumable = true
  const record = turn.record
  record.reply = result.text
  record.costUsd = result.costUsd
  record.durationMs = result.durationMs
  record.modelCalls = result.modelCalls
  ctx.metrics.record(result.durationMs, result.costUsd)
  const error = TurnOutcome.classify(frame, facts, result)
  if (error !== undefined) return unsafeFail(ctx, turn, error, now)
  record.status = "succeeded"
  record.finishedAt = iso(now)
  state.finished++
  Deferred.unsafeDone(turn.deferred, Exit.succeed(result))
  ctx.reports.unsafePost(
    ctx.name,
    "result",
    {
      text: preview(result.text),
      costUsd: result.costUsd,
      durationMs: result.durationMs,
      modelCalls: result.modelCalls
    },
    turn.id,
    now
  )
  ctx.metrics.count("ok")
}

/** Records what the model does as it streams: tool calls into the transcript, both for progress displays. */
const observe = (ctx: AgentContext, turn: Turn, frame: Protocol.AssistantFrame) => {
  const onActivity = ctx.options.onActivity
  for (const block of frame.message.content) {
    if (block.type === "tool_use" && block.name !== undefined) {
      turn.record.toolCalls.push({ id: block.id ?? "", name: block.name, input: block.input ?? {} })
      onActivity?.({ _tag: "Tool", turnId: turn.id, tool: block.name, input: block.input ?? {} })
    } else if (block.type === "text" && block.text !== undefined) {
      onActivity?.({ _tag: "Text", turnId: turn.id, text: block.text })
    }
  }
}

/** One frame of the process that runs `active`, as its reader sees it. */
export const onFrame = (ctx: AgentContext, active: Active, frame: TurnFrame, now: number) => {
  switch (frame._tag) {
    case "Init":
      // The CLI has taken the message: the session is on disk now, and a restart must resume it.
      ctx.state.sessionId = frame.frame.session_id
      ctx.state.resumable = true
      return
    case "Assistant":
      return observe(ctx, active.turn, frame.frame)
    case "Result":
      finish(ctx, active.turn, frame.frame, now)
      // The turn is over now (its caller may already be on to the next thing); the supervisor tidies up.
      ctx.state.current = undefined
      ctx.state.status = "idle"
      return Deferred.unsafeDone(active.ended, Exit.succeed(undefined))
  }
}

/** The process of `active` exited: the turn is over for it. */
export const onExit = (active: Active, exit: ExitInfo) =>
  Deferred.unsafeDone(active.ended, Exit.succeed({ _tag: "Exited", exit }))

/** Records a permission decision in the turn in flight (the transcript) and the report log. */
export const recordPermission = (ctx: AgentContext, record: PermissionRecord) =>
  Effect.clockWith((clock) =>
    Effect.sync(() => {
      const turn = ctx.active?.turn
      turn?.record.permissions.push(record)
      ctx.reports.unsafePost(ctx.name, "permission", record, turn?.id, clock.unsafeCurrentTimeMillis())
    })
  )

/** Asks the process to interrupt its turn, without waiting for the answer (the result frame says the rest). */
export const sendInterrupt = (ctx: AgentContext, process: ClaudeProcess) =>
  process.request({ subtype: "interrupt" }).pipe(
    Effect.timeout("5 seconds"),
    Effect.ignore,
    // Interruptible even when asked from a finalizer (a cancelled caller's): the agent's scope must stop it.
    Effect.interruptible,
    Effect.forkIn(ctx.scope)
  )

/**
 * Keeps the turn's clock: an alarm at the next instant something may be due (the deadline, the end of an
 * interrupt's grace, or a stall). When it rings, the turn is interrupted at its deadline, and the process's
 * service ends when the turn outlives its interrupt's grace or the process falls silent.
 */
export const watch = (ctx: AgentContext, active: Active): Effect.Effect<void> =>
  Effect.sync(() => {
    const stallAt = Math.max(active.process.lastOutputAt(), active.startedAt) + ctx.stallMs
    const checkAt = Math.min(
      stallAt,
      active.interruptedAt === null ? active.deadline : active.interruptedAt + ctx.graceMs
    )
    active.cancelAlarm()
    active.cancelAlarm = ctx.alarms.set(checkAt, check(ctx, active))
  })

const check = (ctx: AgentContext, active: Active): Effect.Effect<void> =>
  Effect.clockWith((clock) => {
    if (ctx.active !== active) return Effect.void // over already
    const now = clock.unsafeCurrentTimeMillis()
    const stallAt = Math.max(active.process.lastOutputAt(), active.startedAt) + ctx.stallMs
    if (active.interruptedAt === null && now >= active.deadline) {
      if (active.turn.interruptReason === null) active.turn.interruptReason = "timeout"
      active.interruptedAt = now
      return Effect.zipRight(sendInterrupt(ctx, active.process), watch(ctx, active))
    }
    if (active.interruptedAt !== null && now >= active.interruptedAt + ctx.graceMs) {
      return Deferred.succeed(active.ended, {
        _tag: "Stalled",
        reason: `the turn did not end within ${ctx.graceMs} ms of its interrupt`
      })
    }
    if (now >= stallAt) {
      return sendInterrupt(ctx, active.process).pipe(
        Effect.zipRight(Deferred.succeed(active.ended, {
          _tag: "Stalled",
          reason: `no output for ${Duration.format(ctx.settings.stallTimeout)}`
        }))
      )
    }
    return watch(ctx, active) // output came meanwhile: the stall moved on
  })

const noAlarm = () => undefined

/** Sends the turn and waits until it is over: `undefined` (its result came), or why the process ended. */
export const run = (
  ctx: AgentContext,
  process: ClaudeProcess,
  generation: number,
  turn: Turn
): Effect.Effect<ProcessEnd | undefined> =>
  Effect.clockWith((clock) =>
    Effect.withFiberRuntime<ProcessEnd | undefined>((fiber) => {
      const now = clock.unsafeCurrentTimeMillis()
      turn.record.status = "running"
      turn.record.startedAt = iso(now)
      ctx.state.current = turn
      ctx.state.status = "working"
      const active: Active = {
        turn,
        process,
        generation,
        startedAt: now,
        deadline: turn.deadlineAt ?? now + turn.timeoutMs,
        ended: Deferred.unsafeMake(fiber.id()),
        interruptedAt: null,
        cancelAlarm: noAlarm
      }
      ctx.active = active
      if (ctx.options.lifecycle !== "run") {
        ctx.reports.unsafePost(ctx.name, "turn_started", { prompt: preview(turn.text) }, turn.id, now)
      }
      return process.sendUser(turn.text).pipe(
        Effect.zipRight(watch(ctx, active)),
        Effect.zipRight(Deferred.await(active.ended)),
        Effect.ensuring(Effect.sync(() => {
          ctx.active = undefined
          ctx.state.current = undefined
          active.cancelAlarm()
        }))
      )
    })
  ).pipe(
    Effect.withSpan("flotta.turn", {
      attributes: { "flotta.agent": ctx.name, "flotta.turn": turn.id },
      captureStackTrace: false
    })
  )

/**
 * Turn metrics, tagged with the agent (and the outcome). The label arrays are made once per agent, so each
 * update finds its metric in Effect's cache instead of building and hashing a key per turn.
 */
export const metricsFor = (
  name: string,
  telemetry: Pick<typeof Telemetry, "turnsTotal" | "turnDurationMs" | "costUsdTotal">
) => {
  const agent = [MetricLabel.make("agent", name)]
  const byOutcome = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
  return {
    count: (outcome: string) => {
      let tags = byOutcome.get(outcome)
      if (tags === undefined) {
        tags = [...agent, MetricLabel.make("outcome", outcome)]
        byOutcome.set(outcome, tags)
      }
      telemetry.turnsTotal.unsafeUpdate(1, tags)
    },
    record: (durationMs: number, costUsd: number) => {
      telemetry.turnDurationMs.unsafeUpdate(durationMs, agent)
      telemetry.costUsdTotal.unsafeUpdate(costUsd, agent)
    }
  }
}

export type TurnMetrics = ReturnType<typeof metricsFor>
