/**
 * A hibernated agent, kept as nothing but its record: its info as it was when it fell asleep, the options it wakes
 * with (a permission given as a function included), and its row in the store. No fiber, scope or process is kept
 * for it, so a fleet holds thousands. Its face (`handle`) answers what needs no process from that record and from
 * the store (status, info, transcript, results, a fork's origin); a prompt or a wake brings it back first (its
 * registry's `revive`: the agent as a restart of the host would, asleep until woken).
 */
import { Effect, Exit, Option } from "effect"
import type { Agent } from "../Agent.js"
import type { AgentInfo, AgentRow, AgentStatusView, TurnRecord, TurnResult, TurnRow } from "../AgentView.js"
import { NoResult, TurnPending } from "../Errors.js"
import type { AgentClosed, TurnError } from "../Errors.js"
import { ownTurns } from "../Store.js"
import type { StoreShape } from "../Store.js"
import type { AgentOptions } from "./agentOptions.js"
import { forkOptions, forkPointOf } from "./forkPoint.js"
import { outcomeOf } from "./restoredTurns.js"

export interface Dormant {
  /** As it was when it fell asleep (status `hibernated`, no process). */
  readonly info: AgentInfo
  /** The options it wakes with: its own, with the permission in force and its turn timeout. */
  readonly options: AgentOptions
  /** Its row, as the store keeps it (status `hibernated`). */
  readonly row: AgentRow
}

/** A sleeper's info from its row and stored turns (a restart of the host brought it back asleep). */
export const infoOf = (row: AgentRow, turns: ReadonlyArray<TurnRow>): AgentInfo => {
  const finished = turns.filter((t) => t.record.status === "succeeded")
  const failed = turns.filter((t) => t.record.status === "failed").length
  const context = [...turns].reverse().find((t) => t.record.context !== undefined)?.record.context
  const o = row.options
  return {
    name: row.name,
    lifecycle: row.lifecycle,
    status: "hibernated",
    pid: null,
    sessionId: row.sessionId,
    alive: false,
    cwd: o.cwd,
    model: o.model ?? null,
    permission: o.permission,
    role: o.role ?? "member",
    current: null,
    queued: 0,
    totals: {
      turns: finished.length + failed,
      failed,
      costUsd: finished.reduce((sum, t) => sum + t.record.costUsd, 0)
    },
    restarts: row.restarts,
    startedAt: row.startedAt,
    closedReason: null,
    parkedUntil: null,
    ...(o.sandbox === undefined ? {} : { sandbox: o.sandbox }),
    ...(row.forkedFrom === undefined ? {} : { forkedFrom: row.forkedFrom }),
    ...(context === undefined ? {} : { context }),
    ...(row.sessionWritesLost === undefined ? {} : { sessionWritesLost: row.sessionWritesLost }),
    ...(o.labels === undefined ? {} : { labels: o.labels })
  }
}

/** The face of a sleeper (see the module's comment). */
export const handle = (
  dormant: Dormant,
  deps: {
    readonly store: StoreShape
    readonly historyLimit: number
    readonly revive: Effect.Effect<Agent, AgentClosed>
  }
): Agent => {
  const { info, row } = dormant
  const name = info.name
  const turns = Effect.map(deps.store.turns(name), (rows) => ownTurns(row, rows))
  /** A stored turn's outcome: its result, its error, or the turn still pending. */
  const outcome = (found: TurnRow | undefined, turnId: string) =>
    Effect.suspend((): Effect.Effect<TurnResult, TurnError | TurnPending | NoResult> => {
      if (found === undefined) return new NoResult({ name, turnId })
      const { status } = found.record
      if (status === "queued" || status === "running") {
        return new TurnPending({ name, turnId: found.record.turnId, status })
      }
      return Option.match(outcomeOf(found), {
        onNone: () => Effect.dieMessage(`turn ${turnId} of ${name}: its stored outcome could not be read`),
        onSome: (exit) => exit
      })
    })
  const find = (turnId: string) => Effect.map(turns, (rows) => rows.find((r) => r.record.turnId === turnId))
  // A sleeper has no turn in flight or queued: every turn it has is over, so waiting is reading.
  const awaitTurn = (turnId: string) =>
    Effect.flatMap(find(turnId), (found) =>
      outcome(found, turnId).pipe(
        Effect.catchTag("TurnPending", () => Effect.flatMap(deps.revive, (agent) => agent.await(turnId)))
      ))
  const status: AgentStatusView = {
    status: "hibernated",
    current: null,
    currentStartedAt: null,
    queued: 0,
    turns: info.totals.turns,
    parkedUntil: null,
    ...(info.context === undefined ? {} : { context: info.context })
  }
  return {
    name,
    lifecycle: row.lifecycle,
    prompt: (text, options) => Effect.flatMap(deps.revive, (agent) => agent.prompt(text, options)),
    compact: (instructions) => Effect.flatMap(deps.revive, (agent) => agent.compact(instructions)),
    clear: Effect.flatMap(deps.revive, (agent) => agent.clear),
    await: awaitTurn,
    watch: awaitTurn,
    result: (turnId) =>
      Effect.flatMap(turns, (rows) => {
        const found = turnId === "latest"
          ? [...rows].reverse().find((r) => r.record.status === "succeeded" || r.record.status === "failed")
          : rows.find((r) => r.record.turnId === turnId)
        return outcome(found, turnId)
      }),
    status: Effect.succeed(status),
    info: Effect.succeed(info),
    transcript: Effect.map(
      turns,
      (rows): ReadonlyArray<TurnRecord> => rows.slice(-deps.historyLimit).map((r) => r.record)
    ),
    interrupt: Effect.succeed(false),
    // Brought back asleep (no process): it keeps its labels like any agent.
    relabel: (labels) => Effect.flatMap(deps.revive, (agent) => agent.relabel(labels)),
    forkPoint: (at) =>
      Effect.flatMap(turns, (rows) =>
        forkPointOf({
          name,
          lifecycle: row.lifecycle,
          options: forkOptions(dormant.options),
          resumable: row.resumable,
          sessionId: row.sessionId,
          forkedFrom: row.forkedFrom,
          busy: false,
          turns: rows.map((r) => r.record),
          sessionOf: (turnId) =>
            Effect.succeed(Option.flatMap(
              Option.flatMap(Option.fromNullable(rows.find((r) => r.record.turnId === turnId)), outcomeOf),
              (exit) => (Exit.isSuccess(exit) ? Option.some(exit.value.sessionId) : Option.none())
            ))
        }, at)),
    hibernate: () => Effect.succeed(false),
    wake: (reason) => Effect.flatMap(deps.revive, (agent) => agent.wake(reason)),
    idleSince: () => null,
    // Its registry closes a sleeper by its record (see `Registry.close`).
    shutdown: () => Effect.void
  }
}
