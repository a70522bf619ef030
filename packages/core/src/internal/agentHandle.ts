/**
 * The handle a caller holds on an agent (`Agent`): prompts queue turns, `await`/`watch`/`result` read their
 * outcomes, `status`/`info`/`transcript` show the agent, `interrupt` stops the turn in flight and `shutdown`
 * closes the agent.
 */
import { Clock, Deferred, Duration, Effect, Exit, Fiber, FiberId, Option } from "effect"
import type { Agent } from "../Agent.js"
import type { AgentRow, TurnRecord, TurnResult } from "../AgentView.js"
import {
  AgentClosed,
  CannotHibernate,
  InvalidSpec,
  NoResult,
  TurnInterrupted,
  TurnPending,
  TurnTimeout
} from "../Errors.js"
import type { SandboxUnavailable, SpawnFailed, TurnError } from "../Errors.js"
import { withLabels } from "./agentOptions.js"
import type { AgentContext, AgentDeps, Turn } from "./agentState.js"
import * as AgentStatus from "./agentStatus.js"
import type { Dormant } from "./dormant.js"
import { forkOptions, forkPointOf } from "./forkPoint.js"
import * as Supervisor from "./supervisor.js"
import * as Turns from "./turn.js"
import * as TurnRecords from "./turnRecord.js"

/** What the handle needs besides the agent's context. */
export interface HandleParts {
  /** Every turn still in history, oldest first. */
  readonly history: Map<string, Turn>
  /** The supervisor's fiber: a shutdown stops it. */
  readonly supervisor: Fiber.Fiber<void>
  readonly defaultTimeoutMs: number
  /** When the agent first started (ISO): a restored agent keeps its own. */
  readonly startedAt: string
  /** Its row, as the store keeps it now. */
  readonly rowOf: () => AgentRow
}

/** A live agent's handle, and what its registry keeps of it once it sleeps (see `dormancy`). */
export interface Made {
  readonly agent: Agent
  /**
   * Its record for its registry to keep while it sleeps: none unless it sleeps with nothing on its way. Once it
   * has given it, this handle is a stale one (its prompts and wakes go to the agent brought back).
   */
  readonly dormancy: () => Option.Option<Dormant>
}

export const make = (ctx: AgentContext, deps: AgentDeps, parts: HandleParts): Made => {
  const { name, options, settings, state } = ctx
  const { defaultTimeoutMs, history, startedAt, supervisor } = parts

  const prune = () => {
    for (const [id, turn] of history) {
      if (history.size <= settings.historyLimit) break
      if (TurnRecords.isDone(turn)) history.delete(id)
    }
  }

  /**
   * Queues a turn: at the back of the queue (a prompt), or next (`front`: a compaction or a clear). Asleep, the
   * agent wakes for it (through admission, like any start); the turn waits for it in the queue.
   */
  const queueTurn = (
    fields: Omit<Parameters<typeof TurnRecords.make>[0], "id">,
    now: number,
    front: boolean
  ): string => {
    const id = `t${++state.turnCounter}`
    const turn = TurnRecords.make({ ...fields, id }, now)
    // Whatever happened to the conversation since the last turn (a fork, say) opens this one.
    if (state.marks.length > 0) turn.record.marks = state.marks.splice(0)
    history.set(id, turn)
    prune()
    if (front) ctx.queue.unshift(turn)
    else ctx.queue.push(turn)
    ctx.saveTurn(turn)
    if (ctx.sleep !== null) Supervisor.wakeUp(ctx.sleep, front ? `a ${turn.kind}` : "a prompt")
    else Turns.pump(ctx, now)
    return id
  }

  const enqueue = (
    text: string,
    opts: { readonly timeout?: Duration.DurationInput } | undefined,
    front: boolean
  ): Effect.Effect<string, AgentClosed | InvalidSpec> =>
    Effect.clockWith((clock) =>
      Effect.withFiberRuntime<string, AgentClosed | InvalidSpec>((fiber) => {
        if (state.closedReason !== null) return new AgentClosed({ name, reason: state.closedReason })
        if (typeof text !== "string" || text.trim().length === 0) {
          return new InvalidSpec({ path: "text", reason: "a prompt must be a non-empty string" })
        }
        const timeoutMs = opts?.timeout === undefined ? defaultTimeoutMs : Duration.toMillis(opts.timeout)
        if (!(timeoutMs > 0)) {
          return new InvalidSpec({ path: "timeout", reason: "a timeout must be a positive duration" })
        }
        const now = clock.unsafeCurrentTimeMillis()
        return Effect.succeed(queueTurn(
          {
            text,
            timeoutMs,
            deadlineAt: opts?.timeout === undefined ? null : now + timeoutMs,
            deferred: Deferred.unsafeMake(fiber.id()),
            parentSpan: Option.fromNullable(fiber.currentSpan)
          },
          now,
          front
        ))
      })
    )

  // A handle gone dormant since it was taken: the agent brought back takes the turn.
  const prompt: Agent["prompt"] = (text, opts) =>
    state.dormant
      ? Effect.flatMap(deps.revive(name), (agent) => agent.prompt(text, opts))
      : enqueue(text, opts, false)

  const compact: Agent["compact"] = (instructions) =>
    state.dormant
      ? Effect.flatMap(deps.revive(name), (agent) => agent.compact(instructions))
      : enqueue(instructions === undefined ? "/compact" : `/compact ${instructions}`, undefined, true)

  const clear: Agent["clear"] = Effect.suspend(() =>
    state.dormant ? Effect.flatMap(deps.revive(name), (agent) => agent.clear) : enqueue("/clear", undefined, true)
  )

  // Fuller than `autoCompactAt` after a turn: a compaction goes next (asked for with no instructions of its own).
  ctx.compactNext = (reason, now) => {
    queueTurn(
      {
        text: "/compact",
        timeoutMs: defaultTimeoutMs,
        deadlineAt: null,
        deferred: Deferred.unsafeMake(FiberId.none),
        parentSpan: Option.none()
      },
      now,
      true
    )
    ctx.reports.unsafePost(name, "compaction_queued", { reason }, undefined, now)
  }

  const interruptTurn = (turn: Turn, reason: "user" | "timeout") =>
    Effect.clockWith((clock) => {
      const active = ctx.active
      if (active === undefined || active.turn !== turn || TurnRecords.isDone(turn) || turn.interruptReason !== null) {
        return Effect.succeed(false)
      }
      // A parked turn has nothing running in the CLI to interrupt: it ends here (the CLI still holds its prompt,
      // and merges it into the next one, as after any interrupt).
      if (active.parked !== null) {
        return Effect.as(Turns.fail(ctx, turn, new TurnInterrupted({ name, turnId: turn.id })), true)
      }
      turn.interruptReason = reason
      active.interruptedAt = clock.unsafeCurrentTimeMillis()
      Turns.watch(ctx, active) // the interrupt's grace is timed from now
      return Effect.as(Turns.sendInterrupt(ctx, active.running), true)
    })

  /** Cancels a turn someone stopped waiting for: drop it if queued, interrupt it if running. */
  const cancel = (turnId: string) =>
    Effect.suspend(() => {
      const turn = history.get(turnId)
      if (turn === undefined || TurnRecords.isDone(turn)) return Effect.void
      if (ctx.active?.turn === turn) return Effect.asVoid(interruptTurn(turn, "user"))
      return Turns.fail(ctx, turn, new TurnInterrupted({ name, turnId }))
    })

  /** A turn's outcome. At its deadline a turn still queued expires here; the agent interrupts a running one. */
  const outcomeOf = (turn: Turn): Effect.Effect<TurnResult, TurnError> => {
    const outcome = Deferred.await(turn.deferred)
    const deadlineAt = turn.deadlineAt
    if (deadlineAt === null) return outcome
    return Clock.currentTimeMillis.pipe(
      Effect.flatMap((now) => outcome.pipe(Effect.timeoutOption(Duration.millis(Math.max(0, deadlineAt - now))))),
      Effect.flatMap(Option.match({
        onSome: Effect.succeed,
        onNone: () =>
          (turn.record.status === "queued"
            ? Turns.fail(ctx, turn, new TurnTimeout({ name, turnId: turn.id, timeoutMs: turn.timeoutMs }))
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
      const turn = turnId === "latest"
        ? [...history.values()].reverse().find(TurnRecords.isDone)
        : history.get(turnId)
      if (turn === undefined) return new NoResult({ name, turnId })
      const { status } = turn.record
      if (status === "queued" || status === "running") return new TurnPending({ name, turnId: turn.id, status })
      return Deferred.await(turn.deferred)
    })

  const statusNow = () => AgentStatus.statusOf(ctx)

  const status = Effect.sync(statusNow)

  const info = Effect.clockWith((clock) =>
    Effect.map(status, (view) => AgentStatus.infoOf(ctx, startedAt, view, clock.unsafeCurrentTimeMillis()))
  )

  const infoNow = () => AgentStatus.infoOf(ctx, startedAt, statusNow())

  const transcript = Effect.sync((): ReadonlyArray<TurnRecord> =>
    [...history.values()].map((turn) => structuredClone(turn.record))
  )

  const interrupt = Effect.suspend(() =>
    ctx.active === undefined
      ? Effect.succeed(false)
      : Effect.zipRight(deps.permission.expire(name, "interrupted"), interruptTurn(ctx.active.turn, "user"))
  )

  /** The options a fork (or a wake from dormancy) takes: its own, with the permission in force. */
  const keptOptions = () => ({
    ...withLabels(options, state.labels),
    permission: state.policy,
    timeout: Duration.millis(defaultTimeoutMs)
  })

  const forkPoint: Agent["forkPoint"] = (at) =>
    Effect.suspend(() =>
      forkPointOf({
        name,
        lifecycle: options.lifecycle ?? "session",
        options: forkOptions(keptOptions()),
        resumable: state.resumable,
        sessionId: state.sessionId,
        forkedFrom: state.forkedFrom,
        busy: ctx.active !== undefined || ctx.queue.length > 0,
        turns: [...history.values()].map((turn) => turn.record),
        sessionOf: (turnId) => {
          const turn = history.get(turnId)
          if (turn === undefined) return Effect.succeedNone
          return Effect.map(
            Effect.exit(Deferred.await(turn.deferred)),
            (exit) => Exit.isSuccess(exit) ? Option.some(exit.value.sessionId) : Option.none()
          )
        }
      }, at)
    )

  /** Since when it has been idle with a live process (null: it is not), as `maxLive` and `hibernateAfter` see it. */
  const idleSince = () =>
    (options.lifecycle ?? "session") === "session" && state.status === "idle" && state.process !== undefined &&
      ctx.active === undefined && ctx.queue.length === 0 && state.waitingApprovals === 0 &&
      ctx.parking.parkedUntil() === null
      ? state.lastActiveAt
      : null

  /** Why it cannot hibernate now, when it cannot. */
  const busyWith = (): string | null => {
    if (options.lifecycle === "run") return "it is a run, which takes one turn"
    if (state.closedReason !== null) return `it is closed (${state.closedReason})`
    if (ctx.active !== undefined) return `it is working on ${ctx.active.turn.id}`
    if (ctx.queue.length > 0) return `${ctx.queue.length} turn(s) wait in its queue`
    if (ctx.parking.parkedUntil() !== null) return "it is parked at a usage limit"
    if (state.process === undefined) return `it is ${state.status}, with no process to end`
    return null
  }

  const hibernate: Agent["hibernate"] = (reason) =>
    Effect.clockWith((clock) =>
      Effect.suspend(() => {
        if (ctx.sleep !== null) return Effect.succeed(false)
        const busy = busyWith()
        if (busy !== null) return new CannotHibernate({ name, reason: busy })
        const running = state.process!
        const sleep = {
          woken: false,
          down: Deferred.unsafeMake<void>(FiberId.none),
          wake: Deferred.unsafeMake<string>(FiberId.none),
          up: Deferred.unsafeMake<void, SpawnFailed | SandboxUnavailable | AgentClosed>(FiberId.none)
        }
        ctx.sleep = sleep
        state.status = "hibernated"
        state.process = undefined
        ctx.saveAgent()
        // The supervisor ends the process cleanly and waits for a wake.
        Deferred.unsafeDone(running.ended, Exit.succeed({ _tag: "Hibernated", reason }))
        const idleMs = clock.unsafeCurrentTimeMillis() - state.lastActiveAt
        // Done once its process has ended and its slot is free.
        return ctx.reports.post(name, "hibernated", { reason, idleMs, sessionId: state.sessionId }).pipe(
          Effect.zipRight(Deferred.await(sleep.down)),
          Effect.as(true)
        )
      })
    )

  const wake: Agent["wake"] = (reason = "woken by request") =>
    Effect.suspend(() => {
      if (state.dormant) return Effect.flatMap(deps.revive(name), (agent) => agent.wake(reason))
      const sleep = ctx.sleep
      if (sleep === null) return Effect.succeed(false)
      Supervisor.wakeUp(sleep, reason)
      return Effect.as(Deferred.await(sleep.up), true)
    })

  /**
   * What its registry keeps of it once it sleeps: its info, its options and its row. None unless it sleeps with
   * nothing on its way (no wake asked for, nothing queued).
   */
  const dormancy = (): Option.Option<Dormant> => {
    const sleep = ctx.sleep
    if (sleep === null || sleep.woken || ctx.queue.length > 0 || ctx.active !== undefined) return Option.none()
    if (state.closedReason !== null || state.dormant) return Option.none()
    // From now on this handle is a stale one: its prompts and wakes go to the agent its registry brings back.
    state.dormant = true
    return Option.some({
      info: { ...infoNow(), status: "hibernated" },
      options: keptOptions(),
      row: { ...parts.rowOf(), status: "hibernated", process: null }
    })
  }

  const shutdown = Effect.fn("Agent.shutdown")(function*(reason: string) {
    if (state.closedReason === null) state.closedReason = reason
    state.closedAt ??= TurnRecords.iso(yield* Clock.currentTimeMillis)
    state.status = "closed"
    ctx.saveAgent()
    yield* deps.permission.expire(name, "closed")
    yield* Fiber.interrupt(supervisor)
    const closed = new AgentClosed({ name, reason: state.closedReason })
    if (ctx.active !== undefined) yield* Turns.fail(ctx, ctx.active.turn, closed)
    yield* Supervisor.failWaiting(ctx, closed)
  })

  const relabel: Agent["relabel"] = (labels) =>
    Effect.sync(() => {
      state.labels = { ...labels }
      ctx.saveAgent()
    })

  const agent: Agent = {
    name,
    lifecycle: options.lifecycle ?? "session",
    prompt,
    compact,
    clear,
    await: awaitTurn,
    watch,
    result,
    status,
    info,
    transcript,
    interrupt,
    forkPoint,
    relabel,
    hibernate,
    wake,
    idleSince,
    shutdown
  }
  return { agent, dormancy }
}
