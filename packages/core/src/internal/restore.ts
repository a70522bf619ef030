/**
 * A restart of the host, graceful or not: every agent the store has as live comes back under its name,
 * resuming its session (`--resume`), with its queued turns in order. First, whatever is left of the dead
 * host's children is ended, so no orphan writes the session file the resumed process reads. The turn that
 * was in flight ends as `HostRestarted` (not sent again: the model may already have acted); async runs in
 * flight end the same way. An agent that cannot come back is closed, with the reason, and never blocks the
 * others.
 */
import { Clock, Effect, Schema } from "effect"
import { errorView } from "../AgentView.js"
import type { AgentRow, TurnRow } from "../AgentView.js"
import { AgentClosed, HostRestarted, TurnErrorSchema } from "../Errors.js"
import type { Registry } from "../Registry.js"
import type { ReportLog } from "../ReportLog.js"
import type { Runs } from "../Run.js"
import { ownTurns } from "../Store.js"
import type { StoreShape } from "../Store.js"
import { optionsOf } from "./agentOptions.js"
import * as Processes from "./processes.js"
import { iso } from "./turnRecord.js"

export interface RestoreReport {
  /** Agents back under their names, and how many queued turns each took up again. */
  readonly restored: ReadonlyArray<{ readonly name: string; readonly sessionId: string; readonly queued: number }>
  /** Agents that could not come back, and why. */
  readonly closed: ReadonlyArray<{ readonly name: string; readonly reason: string }>
  /** Turns that were in flight: each ended as HostRestarted. */
  readonly interruptedTurns: ReadonlyArray<{ readonly name: string; readonly turnId: string }>
  /** Async runs that were in flight: each ended as HostRestarted, its worktree kept. */
  readonly interruptedRuns: ReadonlyArray<string>
  /** Children of the dead host that were still running, ended before anything resumed. */
  readonly orphansEnded: ReadonlyArray<{ readonly name: string; readonly pid: number }>
}

const encodeError = Schema.encodeSync(TurnErrorSchema)

export const restore = Effect.fnUntraced(function*(deps: {
  readonly store: StoreShape
  readonly registry: Registry
  readonly runs: Runs
  readonly reports: ReportLog
}) {
  const { registry, reports, store } = deps
  const live = (yield* store.agents).filter((row) => row.status !== "closed")
  const interruptedRuns = yield* deps.runs.restore
  if (live.length === 0) {
    return { restored: [], closed: [], interruptedTurns: [], interruptedRuns, orphansEnded: [] }
  }
  const now = yield* Clock.currentTimeMillis
  const at = iso(now)

  // 1. No resume while an orphan of the same session lives: it would go on writing that session's file.
  const orphansEnded = (yield* Effect.forEach(live, (row) =>
    row.process === null
      ? Effect.succeed([])
      : Processes.end(row.process.pid, row.process.startTicks).pipe(
        Effect.tap((ended) => ended ? reports.post(row.name, "orphan_ended", { pid: row.process!.pid }) : Effect.void),
        Effect.map((ended) => (ended ? [{ name: row.name, pid: row.process!.pid }] : []))
      ), { concurrency: "unbounded" })).flat()

  const interruptedTurns: Array<{ name: string; turnId: string }> = []
  /** Ends a stored turn with `error`: in the store and the log. */
  const settle = (row: TurnRow, error: HostRestarted | AgentClosed) => {
    const settled: TurnRow = {
      ...row,
      record: { ...row.record, status: "failed", error: errorView(error), finishedAt: at },
      error: encodeError(error)
    }
    store.saveTurn(settled)
    return Effect.as(reports.post(row.agent, "error", { error: errorView(error) }, row.record.turnId), settled)
  }

  const close = (row: AgentRow, reason: string, turns: ReadonlyArray<TurnRow>) =>
    Effect.gen(function*() {
      store.saveAgent({ ...row, status: "closed", closedReason: reason, closedAt: at, process: null })
      const closed = new AgentClosed({ name: row.name, reason })
      for (const turn of turns) if (turn.record.status === "queued") yield* settle(turn, closed)
      yield* reports.post(row.name, "closed", { reason })
      return { _tag: "Closed" as const, name: row.name, reason }
    })

  // 2. Each agent on its own: one that fails to come back closes and the others go on.
  const outcomes = yield* Effect.forEach(live, (row) =>
    Effect.gen(function*() {
      const turns = yield* Effect.forEach(ownTurns(row, yield* store.turns(row.name)), (turn) => {
        if (turn.record.status !== "running") return Effect.succeed(turn)
        interruptedTurns.push({ name: row.name, turnId: turn.record.turnId })
        return settle(turn, new HostRestarted({ name: row.name, turnId: turn.record.turnId }))
      })
      if (row.lifecycle === "run") return yield* close(row, "the host restarted during the run", turns)
      if (row.notRestorable !== null) return yield* close(row, `not restored: ${row.notRestorable}`, turns)
      const spawned = yield* Effect.either(registry.spawn(row.name, optionsOf(row), { row, turns }))
      if (spawned._tag === "Left") {
        return yield* close(row, `could not be restored: ${spawned.left.message}`, turns)
      }
      const queued = turns.filter((turn) => turn.record.status === "queued").length
      yield* reports.post(row.name, "restored", { sessionId: row.sessionId, queued })
      return { _tag: "Restored" as const, name: row.name, sessionId: row.sessionId, queued }
    }), { concurrency: "unbounded" })

  const restored = outcomes.flatMap((o) => (o._tag === "Restored" ? [o] : []))
  const closed = outcomes.flatMap((o) => (o._tag === "Closed" ? [o] : []))
  for (const c of closed) yield* Effect.logWarning(`agent "${c.name}" was not restored: ${c.reason}`)
  return {
    restored: restored.map(({ name, queued, sessionId }) => ({ name, sessionId, queued })),
    closed: closed.map(({ name, reason }) => ({ name, reason })),
    interruptedTurns,
    interruptedRuns,
    orphansEnded
  }
})
