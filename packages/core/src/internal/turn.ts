/**
 * Turns: the user frame goes out, the process's frames come back until exactly one `result`, and the turn
 * ends with its `TurnResult` or a typed error, recorded in the transcript and the report log. A turn past its
 * deadline is interrupted; one that outlives its interrupt's grace, or whose process falls silent, ends the
 * process's service (the supervisor restarts it).
 *
 * The turn path is driven by its events, with no fiber of its own: a prompt starts the next turn if the agent
 * is free (`pump`), its frames are handled as the process's reader sees them (`onFrame`), its result completes
 * the caller's `Deferred` and starts the next turn on the spot, and the fleet's alarms keep its deadlines.
 */
import { Clock, Context, Deferred, Duration, Effect, Exit } from "effect"
import { errorView } from "../AgentView.js"
import type { TurnResult } from "../AgentView.js"
import type { TurnFrame } from "../ClaudeProcess.js"
import type * as Protocol from "../ClaudeProtocol.js"
import { AgentCrashed, TurnTimeout } from "../Errors.js"
import type { TurnError } from "../Errors.js"
import { CONTINUATION } from "../Parking.js"
import * as TurnOutcome from "../TurnOutcome.js"
import type { Active, AgentContext, ProcessEnd, Running, Turn } from "./agentState.js"
import * as Budget from "./budget.js"
import * as Conversation from "./conversation.js"
import * as LiveTurn from "./liveTurn.js"
import { isDone, iso, preview } from "./turnRecord.js"

export const crashReason = (end: ProcessEnd) =>
  end._tag === "Stalled"
    ? `stalled: ${end.reason}`
    : end._tag === "Hibernated"
    ? `hibernated: ${end.reason}`
    : `the claude process exited unexpectedly (exit code ${end.exit.exitCode ?? "none: killed by a signal"})`

/**
 * A process's service ended (it exited, or stalled): its turn in flight fails with `AgentCrashed` at once
 * (nothing it says from now on is that turn's), and the supervisor is told.
 */
export const crash = (ctx: AgentContext, running: Running, end: ProcessEnd, now: number) => {
  // Nothing more is sent to it: the queue waits for the restarted process.
  if (ctx.state.process === running) {
    ctx.state.process = undefined
    if (ctx.state.status !== "closed") ctx.state.status = "restarting"
  }
  const active = ctx.active
  if (active !== undefined && active.running === running) {
    const turn = active.turn
    unsafeFail(
      ctx,
      turn,
      new AgentCrashed({
        name: ctx.name,
        turnId: turn.id,
        exitCode: end._tag === "Exited" ? end.exit.exitCode : null,
        reason: crashReason(end),
        stderr: end._tag === "Exited" ? end.exit.stderr : running.process.stderrTail()
      }),
      now
    )
  }
  Deferred.unsafeDone(running.ended, Exit.succeed(end))
}

const nanos = (millis: number) => BigInt(millis) * 1_000_000n

/** Ends a turn with a typed error (once): transcript, waiters, report log, metrics, its span. */
export const unsafeFail = (ctx: AgentContext, turn: Turn, error: TurnError, now: number) => {
  if (isDone(turn)) return
  if (turn.record.status === "queued") {
    const waiting = ctx.queue.indexOf(turn)
    if (waiting !== -1) ctx.queue.splice(waiting, 1)
  }
  turn.record.status = "failed"
  turn.record.error = errorView(error)
  turn.record.finishedAt = iso(now)
  ctx.state.failed++
  ctx.saveTurn(turn, { error })
  Deferred.unsafeDone(turn.deferred, Exit.fail(error))
  // A turn the fleet's shutdown ends is not over: a restart over a durable store ends or runs it.
  if (ctx.journal.on) ctx.reports.unsafePost(ctx.name, "error", { error: errorView(error) }, turn.id, now)
  ctx.metrics.count(error._tag)
  const active = ctx.active
  if (active?.turn === turn) end(ctx, active, now, error)
}

export const fail = Effect.fnUntraced(function*(ctx: AgentContext, turn: Turn, error: TurnError) {
  return yield* Effect.clockWith((clock) =>
    Effect.sync(() => unsafeFail(ctx, turn, error, clock.unsafeCurrentTimeMillis()))
  )
})

/** Ends a turn with its `result` frame: a success, or the typed error the frame means. */
const finish = (ctx: AgentContext, active: Active, frame: Protocol.ResultFrame, now: number) => {
  const { state } = ctx
  const turn = active.turn
  const facts: TurnOutcome.TurnFacts = {
    name: ctx.name,
    turnId: turn.id,
    sessionId: state.sessionId,
    costBefore: state.processCost,
    modelCostsBefore: state.processModelCosts,
    interruptReason: turn.interruptReason,
    timeoutMs: turn.timeoutMs,
    expectStructuredOutput: ctx.options.expectStructuredOutput === true
  }
  LiveTurn.ended(ctx, active, frame, now)
  const context = Conversation.contextAfter(ctx, active, frame)
  const result: TurnResult = {
    ...TurnOutcome.resultOf(frame, facts),
    context,
    ...(active.compaction === null ? {} : { compaction: active.compaction })
  }
  const limit = TurnOutcome.limitOf(frame, active.rateLimit)
  state.processCost = frame.total_cost_usd
  state.totalCost += result.costUsd
  state.processModelCosts = TurnOutcome.runningModelCosts(frame) ?? state.processModelCosts
  Budget.count(state.spend, result.costUsd, iso(now))
  if (state.sessionId !== result.sessionId || !state.resumable) {
    state.sessionId = result.sessionId
    state.resumable = true
    ctx.saveAgent()
  }
  if (limit !== undefined) {
    // The group parks either way; the turn waits parked unless someone already asked to stop it.
    ctx.parking.hit(limit, turn.id, now)
    if (ctx.parking.parks && turn.interruptReason === null) return park(ctx, active, now)
  }
  const record = turn.record
  record.reply = result.text
  record.context = context
  state.context = context
  if (turn.kind === "clear") Conversation.cleared(ctx, active, result.sessionId, now)
  record.costUsd = result.costUsd
  if (result.modelCosts !== undefined) record.modelCosts = result.modelCosts
  record.durationMs = result.durationMs
  record.modelCalls = result.modelCalls
  ctx.metrics.record(result.durationMs, result.costUsd)
  active.span.attribute("flotta.cost_usd", result.costUsd)
  active.span.attribute("flotta.model_calls", result.modelCalls)
  for (const [key, attribute] of TOKEN_ATTRIBUTES) {
    const count = result.usage[key]
    if (typeof count === "number") active.span.attribute(attribute, count)
  }
  const error = TurnOutcome.classify(frame, facts, result)
  if (error !== undefined) return unsafeFail(ctx, turn, error, now)
  record.status = "succeeded"
  record.finishedAt = iso(now)
  state.finished++
  ctx.parking.succeeded()
  ctx.saveTurn(turn, { result })
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
  Conversation.compactIfFull(ctx, turn, context, now)
  end(ctx, active, now)
}

/** The result frame's token counts (those it carries) and the turn span's attributes for them. */
const TOKEN_ATTRIBUTES = [
  ["input_tokens", "flotta.tokens.input"],
  ["output_tokens", "flotta.tokens.output"],
  ["cache_read_input_tokens", "flotta.tokens.cache_read"],
  ["cache_creation_input_tokens", "flotta.tokens.cache_creation"]
] as const

/** The turn in flight is over (with `error`, or else "ok"): the agent is free, and takes the next turn at once. */
const end = (ctx: AgentContext, active: Active, now: number, error?: TurnError) => {
  if (ctx.active !== active) return
  ctx.active = undefined
  active.cancelAlarm()
  active.span.attribute("flotta.outcome", error?._tag ?? "ok")
  active.span.end(nanos(now), error === undefined ? Exit.void : Exit.fail(error))
  if (ctx.state.status === "working") ctx.state.status = "idle"
  ctx.state.lastActiveAt = now
  pump(ctx, now)
  if (ctx.active === undefined) ctx.onIdle(now)
}

/** One frame of a process, as its reader sees it: only the turn in flight on that process takes it. */
export const onFrame = (ctx: AgentContext, running: Running, frame: TurnFrame, now: number) => {
  const active = ctx.active
  if (frame._tag === "RateLimit") ctx.parking.observe(frame.frame.rate_limit_info, now)
  // Written as the process exits, whatever it was doing.
  if (frame._tag === "WritesLost") return Conversation.writesLost(ctx, frame.frame, now)
  if (active === undefined || active.running !== running) return
  switch (frame._tag) {
    case "Init":
      // The CLI has taken the message: the session is on disk now, and a restart must resume it.
      if (ctx.state.sessionId !== frame.frame.session_id || !ctx.state.resumable) {
        ctx.state.sessionId = frame.frame.session_id
        ctx.state.resumable = true
        ctx.saveAgent()
      }
      return
    case "Assistant": {
      if (frame.frame.api_error_params?.rate_limit_info !== undefined) {
        active.rateLimit = frame.frame.api_error_params.rate_limit_info
      }
      Conversation.sent(active, frame.frame)
      return LiveTurn.observe(ctx, active, frame.frame, now)
    }
    case "ToolResults":
      return LiveTurn.toolResults(ctx, active, frame.frame, now)
    case "TextDelta":
      return LiveTurn.textDelta(ctx, active, frame.frame, now)
    case "Compacted":
      return Conversation.compacted(ctx, frame.frame, now)
    case "RateLimit":
      active.rateLimit = frame.frame.rate_limit_info
      return
    case "Result":
      return finish(ctx, active, frame.frame, now)
  }
}

/** Asks the process to interrupt its turn, without waiting for the answer (the result frame says the rest). */
export const sendInterrupt = Effect.fnUntraced(function*(ctx: AgentContext, running: Running) {
  return yield* running.process.request({ subtype: "interrupt" }).pipe(
    Effect.timeout("5 seconds"),
    Effect.ignore,
    // Interruptible even when asked from a finalizer (a cancelled caller's): the agent's scope must stop it.
    Effect.interruptible,
    Effect.forkIn(ctx.scope)
  )
})

/**
 * Keeps the turn's clock: an alarm at the next instant something may be due (the deadline, the end of an
 * interrupt's grace, or a stall). When it rings, the turn is interrupted at its deadline, and the process's
 * service ends when the turn outlives its interrupt's grace or the process falls silent.
 */
export const watch = (ctx: AgentContext, active: Active) => {
  active.cancelAlarm()
  // A held turn has nothing due: the hold's end re-arms the alarm.
  if (active.holds > 0) return
  const stallAt = Math.max(active.running.process.lastOutputAt(), active.quietFrom) + ctx.stallMs
  const checkAt = Math.min(
    stallAt,
    active.interruptedAt === null ? active.deadline : active.interruptedAt + ctx.graceMs
  )
  active.cancelAlarm = ctx.alarms.set(checkAt, check(ctx, active))
}

const check = (ctx: AgentContext, active: Active): Effect.Effect<void> =>
  Effect.clockWith((clock) => {
    if (ctx.active !== active || active.holds > 0) return Effect.void // over already, or held
    const now = clock.unsafeCurrentTimeMillis()
    if (active.interruptedAt === null && now >= active.deadline) {
      if (active.turn.interruptReason === null) active.turn.interruptReason = "timeout"
      active.interruptedAt = now
      watch(ctx, active)
      return sendInterrupt(ctx, active.running)
    }
    if (active.interruptedAt !== null && now >= active.interruptedAt + ctx.graceMs) {
      crash(ctx, active.running, {
        _tag: "Stalled",
        reason: `the turn did not end within ${ctx.graceMs} ms of its interrupt`
      }, now)
      return Effect.void
    }
    if (now >= Math.max(active.running.process.lastOutputAt(), active.quietFrom) + ctx.stallMs) {
      const running = active.running
      crash(
        ctx,
        running,
        { _tag: "Stalled", reason: `no output for ${Duration.format(ctx.settings.stallTimeout)}` },
        now
      )
      return sendInterrupt(ctx, running)
    }
    watch(ctx, active) // output came meanwhile: the stall moved on
    return Effect.void
  })

/** Sends a turn to the process: it is the turn in flight from now on. */
const start = (ctx: AgentContext, running: Running, turn: Turn, now: number) => {
  turn.record.status = "running"
  turn.record.startedAt = iso(now)
  ctx.state.status = "working"
  ctx.state.lastActiveAt = now
  // Its parent is the caller's span (a prompt, an ask, an MCP tool call), however late the turn starts.
  const span = ctx.tracer.span("flotta.turn", turn.parentSpan, Context.empty(), [], nanos(now), "internal")
  span.attribute("flotta.agent", ctx.name)
  span.attribute("flotta.turn", turn.id)
  // The CLI's own spans carry `session.id`: this joins them to the turn (they nest under the process's start).
  span.attribute("flotta.session_id", ctx.state.sessionId)
  const active: Active = {
    turn,
    running,
    startedAt: now,
    deadline: turn.deadlineAt ?? now + turn.timeoutMs,
    span,
    interruptedAt: null,
    holds: 0,
    heldSince: null,
    quietFrom: now,
    cancelAlarm: noAlarm,
    rateLimit: null,
    parked: null,
    sessionAtStart: ctx.state.sessionId,
    lastInput: null,
    compaction: null,
    toolStarts: new Map(),
    pendingText: null
  }
  ctx.active = active
  ctx.saveTurn(turn)
  if (ctx.options.lifecycle !== "run") {
    ctx.reports.unsafePost(ctx.name, "turn_started", { prompt: preview(turn.text) }, turn.id, now)
  }
  running.process.sendUser(turn.text)
  watch(ctx, active)
}

const noAlarm = () => undefined

/**
 * Holds the turn in flight while it waits on someone else (a human's approval, a usage limit): the process is
 * rightly silent, so neither its deadline nor a stall can fire. Returns the release, which is idempotent: the
 * deadline moves later by the time held, and silence counts from the release.
 */
export const hold = (ctx: AgentContext, active: Active, now: number): (now: number) => void => {
  active.holds++
  if (active.heldSince === null) active.heldSince = now
  watch(ctx, active)
  let released = false
  return (at) => {
    if (released) return
    released = true
    active.holds--
    if (active.holds > 0 || active.heldSince === null) return
    active.deadline += at - active.heldSince
    active.quietFrom = at
    active.heldSince = null
    if (ctx.active === active) watch(ctx, active)
  }
}

/**
 * Starts the next queued turn if the agent is free: a live process and no turn in flight. A turn whose
 * caller's deadline passed while it waited fails without running.
 */
export const pump = (ctx: AgentContext, now: number) => {
  const running = ctx.state.process
  if (ctx.active !== undefined || running === undefined || ctx.state.status === "closed") return
  if (ctx.parking.parkedUntil() !== null) return // queued turns wait out the usage limit
  while (ctx.queue.length > 0) {
    const turn = ctx.queue.shift()!
    if (turn.deadlineAt !== null && now >= turn.deadlineAt) {
      unsafeFail(ctx, turn, new TurnTimeout({ name: ctx.name, turnId: turn.id, timeoutMs: turn.timeoutMs }), now)
      continue
    }
    const overBudget = Budget.refusal(ctx, turn, now)
    if (overBudget !== undefined) {
      unsafeFail(ctx, turn, overBudget, now)
      continue
    }
    return start(ctx, running, turn, now)
  }
}

/**
 * Parks the turn in flight at a usage limit (see `Parking`): it stays the turn in flight, held (neither its
 * deadline nor a stall fires), and is not sent again: the CLI keeps its prompt. `resume` carries on.
 */
const park = (ctx: AgentContext, active: Active, now: number) => {
  active.rateLimit = null
  active.parked = hold(ctx, active, now)
}

/**
 * Unparked: a parked turn gets the continuation (merged by the CLI with the prompt it kept, so its answer is the
 * turn's result), else the next queued turn starts.
 */
export const resume = (ctx: AgentContext, now: number) => {
  const active = ctx.active
  if (active?.parked == null) return pump(ctx, now)
  const release = active.parked
  active.parked = null
  if (ctx.state.process !== active.running) return release(now) // its process is gone: the crash ends the turn
  active.running.process.sendUser(CONTINUATION)
  release(now)
}

export const pumpNow = Effect.fnUntraced(function*(ctx: AgentContext) {
  return yield* Clock.currentTimeMillis.pipe(Effect.map((now) => pump(ctx, now)))
})
