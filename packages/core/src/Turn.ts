/**
 * One turn's execution: the user frame goes out, the process's frames come back until exactly one `result`,
 * and the turn ends with its `TurnResult` or a typed error, recorded in the transcript and the report log. A
 * turn past its deadline, or whose process falls silent, is interrupted; one that does not end after its
 * interrupt, or whose process dies, ends the process's service (the supervisor restarts it).
 */
import { Deferred, Duration, Effect, Fiber, Metric, Queue } from "effect"
import type { AgentContext, PermissionRecord, TurnRecord } from "./Agent.js"
import type { ClaudeProcess, ExitInfo } from "./ClaudeCli.js"
import type * as Protocol from "./ClaudeProtocol.js"
import type { TurnError } from "./Errors.js"
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

export const iso = (millis: number) => new Date(millis).toISOString()

export const preview = (text: string, max = 200) => (text.length <= max ? text : text.slice(0, max) + "…")

export const errorView = (error: { readonly _tag: string; readonly message: string }) => ({
  _tag: error._tag,
  message: error.message
})

export const isDone = (turn: Turn) => turn.record.status === "succeeded" || turn.record.status === "failed"

/** A new queued turn. */
export const make = (id: string, text: string, timeoutMs: number, deadlineAt: number | null, now: number) =>
  Effect.map(Deferred.make<TurnOutcome.TurnResult, TurnError>(), (deferred): Turn => ({
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
  }))

/** Ends a turn with a typed error (once): transcript, waiters, report log, metrics. */
export const fail = (ctx: AgentContext, turn: Turn, error: TurnError) =>
  Effect.suspend(() => {
    if (isDone(turn)) return Effect.void
    ctx.waiting.delete(turn.id)
    return Effect.clockWith((clock) => {
      turn.record.status = "failed"
      turn.record.error = errorView(error)
      turn.record.finishedAt = iso(clock.unsafeCurrentTimeMillis())
      ctx.state.failed++
      return Deferred.fail(turn.deferred, error).pipe(
        Effect.zipRight(ctx.reports.post(ctx.name, "error", { error: errorView(error) }, turn.id)),
        Effect.zipRight(ctx.metrics.count(error._tag))
      )
    })
  })

/** Ends a turn with its `result` frame: a success, or the typed error the frame means. */
const finish = (ctx: AgentContext, turn: Turn, frame: Protocol.ResultFrame) =>
  Effect.suspend(() => {
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
    const error = TurnOutcome.classify(frame, facts, result)
    const measured = ctx.metrics.record(result.durationMs, result.costUsd)
    if (error !== undefined) return Effect.zipRight(measured, fail(ctx, turn, error))
    return Effect.clockWith((clock) => {
      record.status = "succeeded"
      record.finishedAt = iso(clock.unsafeCurrentTimeMillis())
      state.finished++
      return Deferred.succeed(turn.deferred, result).pipe(
        Effect.zipRight(ctx.reports.post(ctx.name, "result", {
          text: preview(result.text),
          costUsd: result.costUsd,
          durationMs: result.durationMs,
          modelCalls: result.modelCalls
        }, turn.id)),
        Effect.zipRight(measured),
        Effect.zipRight(ctx.metrics.count("ok"))
      )
    })
  })

/** Asks the process to interrupt its turn, without waiting for the answer (the result frame says the rest). */
export const sendInterrupt = (ctx: AgentContext, process: ClaudeProcess) =>
  process.request({ subtype: "interrupt" }).pipe(
    Effect.timeout("5 seconds"),
    Effect.ignore,
    Effect.forkIn(ctx.scope)
  )

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

/** Records a permission decision in the turn in flight (the transcript) and the report log. */
export const recordPermission = (ctx: AgentContext, record: PermissionRecord) =>
  Effect.suspend(() => {
    const turn = ctx.state.current
    turn?.record.permissions.push(record)
    return ctx.reports.post(ctx.name, "permission", record, turn?.id)
  })

/**
 * Puts a `Wake` in the process's queue at `wakeAt` (Clock time): one timer per wait, raced with nothing, so a
 * turn whose frames stream in never arms a timer per frame.
 */
const wakeAt = (process: ClaudeProcess, at: number) =>
  Effect.clockWith((clock) =>
    Effect.sleep(Duration.millis(Math.max(0, at - clock.unsafeCurrentTimeMillis()))).pipe(
      Effect.zipRight(wake(process)),
      Effect.fork
    )
  )

const WAKE = { _tag: "Wake" } as const

/** Makes the turn look at its clock now (after an interrupt, say, whose grace it must start timing). */
export const wake = (process: ClaudeProcess) => Effect.asVoid(Queue.offer(process.frames, WAKE))

/** Sends the turn and reads frames until its result (`undefined`), or a crash or stall (why the process ended). */
export const run = (ctx: AgentContext, process: ClaudeProcess, turn: Turn): Effect.Effect<ProcessEnd | undefined> => {
  let timer: Fiber.RuntimeFiber<void> | undefined
  return Effect.gen(function*() {
    const { settings, state } = ctx
    const clock = yield* Effect.clock
    const startedAt = clock.unsafeCurrentTimeMillis()
    const stallMs = Duration.toMillis(settings.stallTimeout)
    const graceMs = Duration.toMillis(settings.interruptGrace)
    turn.record.status = "running"
    turn.record.startedAt = iso(startedAt)
    state.current = turn
    state.status = "working"
    if (ctx.options.lifecycle !== "run") {
      yield* ctx.reports.post(ctx.name, "turn_started", { prompt: preview(turn.text) }, turn.id)
    }
    yield* process.sendUser(turn.text)
    const deadline = turn.deadlineAt ?? startedAt + turn.timeoutMs
    let interruptedAt: number | null = null
    const stallAt = () => Math.max(process.lastOutputAt(), startedAt) + stallMs
    /** When something may be due: the deadline (or the end of an interrupt's grace), or the stall. */
    const nextCheck = () => Math.min(stallAt(), interruptedAt === null ? deadline : interruptedAt + graceMs)
    const interrupt = (reason: "user" | "timeout", now: number) => {
      if (turn.interruptReason === null) turn.interruptReason = reason
      interruptedAt = now
      return sendInterrupt(ctx, process)
    }
    timer = yield* wakeAt(process, nextCheck())
    while (true) {
      const event = yield* Queue.take(process.frames)
      const now = clock.unsafeCurrentTimeMillis()
      // An interrupt someone else sent (the user's) starts the grace period too.
      if (turn.interruptReason !== null && interruptedAt === null) interruptedAt = now
      if (interruptedAt === null && now >= deadline) {
        // Checked on every frame too: a turn that keeps streaming past its deadline is still stopped.
        yield* interrupt("timeout", now)
      }
      switch (event._tag) {
        case "Wake": {
          if (interruptedAt !== null && now >= interruptedAt + graceMs) {
            return { _tag: "Stalled", reason: `the turn did not end within ${graceMs} ms of its interrupt` } as const
          }
          if (now >= stallAt()) {
            yield* sendInterrupt(ctx, process)
            return { _tag: "Stalled", reason: `no output for ${Duration.format(settings.stallTimeout)}` } as const
          }
          timer = yield* wakeAt(process, nextCheck())
          break
        }
        case "Init":
          // The CLI has taken the message: the session is on disk now, and a restart must resume it.
          state.sessionId = event.frame.session_id
          state.resumable = true
          break
        case "Assistant":
          observe(ctx, turn, event.frame)
          break
        case "Result":
          yield* finish(ctx, turn, event.frame)
          return undefined
        case "Exited":
          return { _tag: "Exited", exit: event.exit } as const
      }
    }
  }).pipe(
    Effect.ensuring(Effect.suspend(() => (timer === undefined ? Effect.void : Fiber.interruptFork(timer)))),
    Effect.ensuring(Effect.sync(() => {
      ctx.state.current = undefined
    })),
    Effect.withSpan("flotta.turn", {
      attributes: { "flotta.agent": ctx.name, "flotta.turn": turn.id },
      captureStackTrace: false
    })
  )
}

/** Metrics are tagged once per agent (and outcome): tagging per update would miss Effect's metric cache. */
export const metricsFor = (
  name: string,
  telemetry: {
    readonly turnsTotal: Metric.Metric.Counter<number>
    readonly turnDurationMs: Metric.Metric.Histogram<number>
    readonly costUsdTotal: Metric.Metric.Counter<number>
  }
) => {
  const counters = new Map<string, Metric.Metric.Counter<number>>()
  const duration = telemetry.turnDurationMs.pipe(Metric.tagged("agent", name))
  const cost = telemetry.costUsdTotal.pipe(Metric.tagged("agent", name))
  return {
    count: (outcome: string) => {
      let counter = counters.get(outcome)
      if (counter === undefined) {
        counter = telemetry.turnsTotal.pipe(Metric.tagged("agent", name), Metric.tagged("outcome", outcome))
        counters.set(outcome, counter)
      }
      return Metric.increment(counter)
    },
    record: (durationMs: number, costUsd: number) =>
      Metric.update(duration, durationMs).pipe(Effect.zipRight(Metric.incrementBy(cost, costUsd)))
  }
}

export type TurnMetrics = ReturnType<typeof metricsFor>
