/**
 * Supervision of one agent's process: it serves turns from the agent's queue until the process exits or
 * stalls, then fails the turn in flight with `AgentCrashed` and starts a new process with `--resume` (the
 * conversation survives). Restarts follow `restartSchedule`: an exponential backoff within a budget of
 * restarts per window; when the budget is spent the agent is closed, with the reason.
 */
import {
  Clock,
  Duration,
  Effect,
  Either,
  Exit,
  Queue,
  Schedule,
  ScheduleDecision,
  ScheduleInterval,
  Scope
} from "effect"
import type { AgentContext, ProcessExited, Running } from "./Agent.js"
import { AgentClosed, AgentCrashed, TurnTimeout } from "./Errors.js"
import type { FleetSettings } from "./FleetConfig.js"
import * as Turn from "./Turn.js"

/**
 * When to restart: the delay doubles with each restart still inside `restartWindow` (from `restartBackoff`,
 * capped at `restartBackoffMax`), and the schedule is done once `maxRestarts` fall inside the window. Its
 * output is the number of restarts in the window, this one included.
 */
export const restartSchedule = (settings: FleetSettings): Schedule.Schedule<number> => {
  const windowMs = Duration.toMillis(settings.restartWindow)
  const baseMs = Duration.toMillis(settings.restartBackoff)
  const maxMs = Duration.toMillis(settings.restartBackoffMax)
  return Schedule.makeWithState<ReadonlyArray<number>, unknown, number>([], (now, _input, recent) => {
    const inWindow = recent.filter((at) => now - at < windowMs)
    if (inWindow.length >= settings.maxRestarts) {
      return Effect.succeed([inWindow, inWindow.length, ScheduleDecision.done] as const)
    }
    const delay = Math.min(baseMs * 2 ** inWindow.length, maxMs)
    return Effect.succeed(
      [
        [...inWindow, now],
        inWindow.length + 1,
        ScheduleDecision.continueWith(ScheduleInterval.after(now + delay))
      ] as const
    )
  })
}

/** Serves turns on one process until it exits or stalls; says why, and which turn it was running. */
const serve = (ctx: AgentContext, running: Running) =>
  Effect.gen(function*() {
    while (true) {
      ctx.state.status = "idle"
      const next: Turn.Turn | ProcessExited = yield* Queue.take(ctx.inbox)
      if (next._tag === "ProcessExited") {
        if (next.generation !== running.generation) continue // an earlier process's, already handled
        return { end: { _tag: "Exited", exit: next.exit } as Turn.ProcessEnd, turn: null }
      }
      ctx.waiting.delete(next.id)
      if (next.record.status !== "queued") continue // cancelled while it waited
      if (next.deadlineAt !== null && (yield* Clock.currentTimeMillis) >= next.deadlineAt) {
        yield* Turn.fail(ctx, next, new TurnTimeout({ name: ctx.name, turnId: next.id, timeoutMs: next.timeoutMs }))
        continue
      }
      const end = yield* Turn.run(ctx, running.process, running.generation, next)
      if (end !== undefined) return { end, turn: next }
    }
  })

const crashReason = (end: Turn.ProcessEnd) =>
  end._tag === "Stalled"
    ? `stalled: ${end.reason}`
    : `the claude process exited unexpectedly (exit code ${end.exit.exitCode ?? "none: killed by a signal"})`

/** Fails every turn that waits, and empties the queue. */
export const failWaiting = (ctx: AgentContext, error: AgentClosed) =>
  Effect.gen(function*() {
    yield* Queue.takeAll(ctx.inbox) // every queued turn is also in `waiting`
    for (const turn of [...ctx.waiting.values()]) yield* Turn.fail(ctx, turn, error)
  })

/** Closes the agent for good: queued turns fail with `AgentClosed`. */
const giveUp = (ctx: AgentContext, reason: string) =>
  Effect.gen(function*() {
    ctx.state.closedReason = reason
    ctx.state.status = "closed"
    yield* failWaiting(ctx, new AgentClosed({ name: ctx.name, reason }))
    yield* ctx.reports.post(ctx.name, "closed", { reason })
  })

/** Serves, crashes and restarts until the restart budget is spent. */
export const supervise = (ctx: AgentContext, first: Running): Effect.Effect<void> =>
  Effect.gen(function*() {
    const restarts = yield* Schedule.driver(restartSchedule(ctx.settings))
    let running = first
    while (true) {
      ctx.state.process = running
      const { end, turn } = yield* serve(ctx, running)
      const stderr = end._tag === "Exited" ? end.exit.stderr : running.process.stderrTail()
      const exitCode = end._tag === "Exited" ? end.exit.exitCode : null
      yield* Scope.close(running.scope, Exit.void)
      ctx.state.process = undefined
      ctx.state.processCost = 0
      let reason = crashReason(end)
      if (turn !== null) {
        yield* Turn.fail(ctx, turn, new AgentCrashed({ name: ctx.name, turnId: turn.id, exitCode, reason, stderr }))
      }
      yield* ctx.reports.post(ctx.name, "crashed", { reason, exitCode, stderr })
      // Restart until a process comes up or the budget is spent.
      while (true) {
        ctx.state.status = "restarting"
        const attempt = yield* Effect.either(restarts.next(undefined))
        if (Either.isLeft(attempt)) {
          return yield* giveUp(
            ctx,
            `restarted ${ctx.settings.maxRestarts} times in ${Duration.format(ctx.settings.restartWindow)}; ` +
              `last: ${reason}`
          )
        }
        const next = yield* Effect.either(ctx.startProcess)
        ctx.state.restarts++
        if (Either.isRight(next)) {
          running = next.right
          yield* ctx.reports.post(ctx.name, "restarted", {
            pid: running.process.pid,
            sessionId: ctx.state.sessionId,
            attempt: attempt.right
          })
          break
        }
        reason = next.left.message
        yield* ctx.reports.post(ctx.name, "crashed", {
          reason,
          exitCode: next.left.exitCode,
          stderr: next.left.stderr
        })
      }
    }
  })
