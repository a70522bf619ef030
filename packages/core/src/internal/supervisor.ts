/**
 * Supervision of one agent's process: when the process exits or stalls, the turn it was running fails with
 * `AgentCrashed`, and a new process starts with `--resume` (the conversation survives), after which the queued
 * turns go on. Restarts follow `restartPolicy`: an exponential backoff within a budget of restarts per window;
 * when the budget is spent the agent is closed, with the reason. The supervisor's fiber only wakes for that:
 * turns never pass through it.
 */
import {
  Clock,
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
import { randomUUID } from "node:crypto"
import { AgentClosed } from "../Errors.js"
import type { FleetSettings } from "../FleetConfig.js"
import type { AgentContext, Running, Sleep } from "./agentState.js"
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

/** Wakes a sleeping agent (once): its supervisor starts its process again. */
export const wakeUp = (sleep: Sleep, reason: string) => {
  if (sleep.woken) return
  sleep.woken = true
  Deferred.unsafeDone(sleep.wake, Exit.succeed(reason))
}

/** Fails every turn that waits in the queue. */
export const failWaiting = Effect.fnUntraced(function*(ctx: AgentContext, error: AgentClosed) {
  return yield* Effect.clockWith((clock) =>
    Effect.sync(() => {
      const now = clock.unsafeCurrentTimeMillis()
      for (const turn of ctx.queue.splice(0)) Turn.unsafeFail(ctx, turn, error, now)
    })
  )
})

/** Closes the agent for good: queued turns fail with `AgentClosed`. */
const giveUp = (ctx: AgentContext, reason: string) =>
  Effect.gen(function*() {
    ctx.state.closedReason = reason
    ctx.state.status = "closed"
    ctx.saveAgent()
    yield* failWaiting(ctx, new AgentClosed({ name: ctx.name, reason }))
    yield* ctx.reports.post(ctx.name, "closed", { reason })
  })

/** The CLI's words when `--resume` names a session it has no file for. */
const NO_CONVERSATION = /No conversation found with session ID/

/**
 * Waits for each process to end, then restarts it until the restart budget is spent. A process that ended because
 * the agent hibernated is not restarted: the agent sleeps until it is woken (a prompt, `wake`), then starts again
 * with `--resume`, through the same admission as any start. `first` is undefined for an agent that starts asleep
 * (a restart of the host brought it back hibernated).
 */
export const supervise = Effect.fnUntraced(function*(ctx: AgentContext, first: Running | undefined) {
  const restarts = yield* Schedule.driver(restartPolicy(ctx.settings))
  // The span this fiber was started under (the spawn's), which each restart's span links to.
  const spawnSpan = Option.match(yield* Effect.option(Effect.currentParentSpan), {
    onNone: () => [],
    onSome: (span) => [{ _tag: "SpanLink", span, attributes: {} } as const]
  })
  const startSpan = (span: string, attributes: Record<string, unknown>) =>
    Effect.withSpan(span, { root: true, links: spawnSpan, attributes: { "flotta.agent": ctx.name, ...attributes } })

  /** Starts processes until one comes up (the new one) or the restart budget is spent (undefined: closed). */
  const restart = (firstReason: string) =>
    Effect.gen(function*() {
      let reason = firstReason
      while (true) {
        const attempt = yield* Effect.either(restarts.next(undefined))
        if (Either.isLeft(attempt)) {
          yield* giveUp(
            ctx,
            `restarted ${ctx.settings.maxRestarts} times in ${Duration.format(ctx.settings.restartWindow)}; ` +
              `last: ${reason}`
          )
          return undefined
        }
        // Its own trace, linked to the agent's spawn: a restart hours later is not part of the spawn's trace.
        const next = yield* Effect.either(ctx.startProcess.pipe(
          startSpan("flotta.restart", { "flotta.restart.attempt": attempt.right, "flotta.restart.reason": reason })
        ))
        ctx.state.restarts++
        if (Either.isRight(next)) {
          ctx.state.process = next.right
          ctx.saveAgent()
          yield* ctx.reports.post(ctx.name, "restarted", {
            pid: next.right.process.pid,
            sessionId: ctx.state.sessionId,
            attempt: attempt.right
          })
          return next.right
        }
        reason = next.left.message
        yield* ctx.reports.post(ctx.name, "crashed", {
          reason,
          exitCode: next.left._tag === "SpawnFailed" ? next.left.exitCode : null,
          stderr: next.left._tag === "SpawnFailed" ? next.left.stderr : ""
        })
        // Killed before the CLI wrote its conversation (or the file is gone): there is nothing to resume, so the
        // next start begins a new session instead of failing the same way until the agent is closed.
        if (next.left._tag === "SpawnFailed" && ctx.state.resumable && NO_CONVERSATION.test(next.left.stderr)) {
          const lost = ctx.state.sessionId
          ctx.state.sessionId = randomUUID()
          ctx.state.resumable = false
          ctx.saveAgent()
          yield* ctx.reports.post(ctx.name, "session_lost", {
            sessionId: lost,
            newSessionId: ctx.state.sessionId,
            reason: "the CLI has no conversation to resume: the next start begins a new one"
          })
        }
      }
    })

  /** Sleeps until woken, then starts again (a start that fails is a crash: restarts follow). */
  const wakeUp = (sleep: Sleep) =>
    Effect.gen(function*() {
      const why = yield* Deferred.await(sleep.wake)
      ctx.state.status = "starting"
      const woke = yield* Effect.either(
        ctx.startProcess.pipe(startSpan("flotta.wake", { "flotta.wake.reason": why }))
      )
      ctx.sleep = null
      if (Either.isRight(woke)) {
        Deferred.unsafeDone(sleep.up, Exit.void)
        ctx.state.process = woke.right
        ctx.saveAgent()
        yield* ctx.reports.post(ctx.name, "woken", {
          pid: woke.right.process.pid,
          sessionId: ctx.state.sessionId,
          reason: why
        })
        return woke.right
      }
      Deferred.unsafeDone(sleep.up, Exit.fail(woke.left))
      const reason = woke.left.message
      yield* ctx.reports.post(ctx.name, "crashed", {
        reason,
        exitCode: woke.left._tag === "SpawnFailed" ? woke.left.exitCode : null,
        stderr: woke.left._tag === "SpawnFailed" ? woke.left.stderr : ""
      })
      return yield* restart(reason)
    })

  let running = first
  while (true) {
    if (running === undefined) {
      running = yield* wakeUp(ctx.sleep!)
      if (running === undefined) return
    }
    ctx.state.process = running
    // A turn may be in flight already: a prompt can come before this fiber first runs.
    ctx.state.status = ctx.active === undefined ? "idle" : "working"
    const now = yield* Clock.currentTimeMillis
    ctx.state.lastActiveAt = now
    yield* Turn.pumpNow(ctx)
    if (ctx.active === undefined) ctx.onIdle(now)
    const end = yield* Deferred.await(running.ended)
    // The old process's cleanup waits, but one that hangs (a dead child's pipes) must not keep the agent down:
    // past the kill escalation's own graces it goes on in the background.
    const closeOld = Scope.close(running.scope, Exit.void).pipe(Effect.disconnect, Effect.timeoutOption(CLEANUP))
    if (end._tag === "Hibernated") {
      // Asleep: its process ends cleanly, and its slot comes back; it starts again once woken.
      ctx.state.process = undefined
      yield* closeOld
      ctx.state.processCost = 0
      ctx.state.processModelCosts = {}
      if (ctx.sleep !== null) Deferred.unsafeDone(ctx.sleep.down, Exit.void)
      running = undefined
      continue
    }
    ctx.state.process = undefined
    ctx.state.status = "restarting"
    const stderr = end._tag === "Exited" ? end.exit.stderr : running.process.stderrTail()
    const exitCode = end._tag === "Exited" ? end.exit.exitCode : null
    // Its turn in flight has failed already (Turn.crash); whatever it says now is nobody's.
    yield* ctx.expireApprovals("crashed")
    const closed = yield* closeOld
    if (Option.isNone(closed)) {
      yield* Effect.logWarning(`the old claude process's cleanup took over ${Duration.format(CLEANUP)}; restarting`)
    }
    ctx.state.processCost = 0
    ctx.state.processModelCosts = {}
    const reason = Turn.crashReason(end)
    yield* ctx.reports.post(ctx.name, "crashed", { reason, exitCode, stderr })
    running = yield* restart(reason)
    if (running === undefined) return
  }
})
