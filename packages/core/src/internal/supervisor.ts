/**
 * Supervision of one agent's process: when the process exits or stalls, the turn it was running fails with
 * `AgentCrashed`, and a new process starts with `--resume` (the conversation survives), after which the queued
 * turns go on. Restarts follow `restartPolicy`: an exponential backoff within a budget of restarts per window;
 * when the budget is spent the agent is closed, with the reason. The supervisor's fiber only wakes for that:
 * turns never pass through it.
 */
import {
  Deferred,
  Duration,
  Effect,
  Either,
  Exit,
  Option,
  Schedule,
  ScheduleDecision,
  ScheduleInterval,
  Scope
} from "effect"
import { AgentClosed } from "../Errors.js"
import type { FleetSettings } from "../FleetConfig.js"
import type { AgentContext, Running } from "./agentState.js"
import * as Turn from "./turn.js"

/**
 * When to restart: the delay doubles with each restart still inside `restartWindow` (from `restartBackoff`,
 * capped at `restartBackoffMax`), and the policy is done once `maxRestarts` fall inside the window. Its
 * output is the number of restarts in the window, this one included.
 */
export const restartPolicy = (settings: FleetSettings): Schedule.Schedule<number> => {
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

/** Longer than a process's own kill escalation (EOF, SIGTERM, SIGKILL: 2 + 5 + 2 s). */
const CLEANUP = Duration.seconds(15)

/** Fails every turn that waits in the queue. */
export const failWaiting = (ctx: AgentContext, error: AgentClosed) =>
  Effect.clockWith((clock) =>
    Effect.sync(() => {
      const now = clock.unsafeCurrentTimeMillis()
      for (const turn of ctx.queue.splice(0)) Turn.unsafeFail(ctx, turn, error, now)
    })
  )

/** Closes the agent for good: queued turns fail with `AgentClosed`. */
const giveUp = (ctx: AgentContext, reason: string) =>
  Effect.gen(function*() {
    ctx.state.closedReason = reason
    ctx.state.status = "closed"
    ctx.saveAgent()
    yield* failWaiting(ctx, new AgentClosed({ name: ctx.name, reason }))
    yield* ctx.reports.post(ctx.name, "closed", { reason })
  })

/** Waits for each process to end, then restarts it until the restart budget is spent. */
export const supervise = (ctx: AgentContext, first: Running): Effect.Effect<void> =>
  Effect.gen(function*() {
    const restarts = yield* Schedule.driver(restartPolicy(ctx.settings))
    // The span this fiber was started under (the spawn's), which each restart's span links to.
    const spawnSpan = Option.match(yield* Effect.option(Effect.currentParentSpan), {
      onNone: () => [],
      onSome: (span) => [{ _tag: "SpanLink", span, attributes: {} } as const]
    })
    let running = first
    while (true) {
      ctx.state.process = running
      // A turn may be in flight already: a prompt can come before this fiber first runs.
      ctx.state.status = ctx.active === undefined ? "idle" : "working"
      yield* Turn.pumpNow(ctx)
      const end = yield* Deferred.await(running.ended)
      ctx.state.process = undefined
      ctx.state.status = "restarting"
      const stderr = end._tag === "Exited" ? end.exit.stderr : running.process.stderrTail()
      const exitCode = end._tag === "Exited" ? end.exit.exitCode : null
      // Its turn in flight has failed already (Turn.crash); whatever it says now is nobody's.
      yield* ctx.expireApprovals("crashed")
      // The restart waits for the old process's cleanup, but a cleanup that hangs (a dead child's pipes) must not
      // keep the agent down: past the kill escalation's own graces it goes on in the background.
      const closed = yield* Scope.close(running.scope, Exit.void).pipe(Effect.disconnect, Effect.timeoutOption(CLEANUP))
      if (Option.isNone(closed)) {
        yield* Effect.logWarning(`the old claude process's cleanup took over ${Duration.format(CLEANUP)}; restarting`)
      }
      ctx.state.processCost = 0
      let reason = Turn.crashReason(end)
      yield* ctx.reports.post(ctx.name, "crashed", { reason, exitCode, stderr })
      // Restart until a process comes up or the budget is spent.
      while (true) {
        const attempt = yield* Effect.either(restarts.next(undefined))
        if (Either.isLeft(attempt)) {
          return yield* giveUp(
            ctx,
            `restarted ${ctx.settings.maxRestarts} times in ${Duration.format(ctx.settings.restartWindow)}; ` +
              `last: ${reason}`
          )
        }
        // Its own trace, linked to the agent's spawn: a restart hours later is not part of the spawn's trace.
        const next = yield* Effect.either(ctx.startProcess.pipe(
          Effect.withSpan("flotta.restart", {
            root: true,
            links: spawnSpan,
            attributes: {
              "flotta.agent": ctx.name,
              "flotta.restart.attempt": attempt.right,
              "flotta.restart.reason": reason
            }
          })
        ))
        ctx.state.restarts++
        if (Either.isRight(next)) {
          running = next.right
          ctx.state.process = running
          ctx.saveAgent()
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
          exitCode: next.left._tag === "SpawnFailed" ? next.left.exitCode : null,
          stderr: next.left._tag === "SpawnFailed" ? next.left.stderr : ""
        })
      }
    }
  })
