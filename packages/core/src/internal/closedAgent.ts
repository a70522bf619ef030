/**
 * A closed agent, read back from its row and its turns in the store (kept there until retention removes them):
 * its info, with status `closed`, when it closed and why, and its transcript. Nothing of it runs: no fiber, scope
 * or process, and no handle. `Flotta.info` and `Flotta.transcript` answer with it for a name no live agent has;
 * every other operation on the name is `AgentNotFound`, which says the agent was closed (`notFound`).
 */
import { Effect, Option } from "effect"
import type { AgentInfo, AgentRow, TurnRecord, TurnRow } from "../AgentView.js"
import { AgentNotFound } from "../Errors.js"
import { ownTurns } from "../Store.js"
import type { StoreShape } from "../Store.js"
import { infoOf as recordInfo } from "./dormant.js"

export interface Closed {
  readonly info: AgentInfo
  /** Its turns, oldest first: the last `historyLimit` of them, as many as a live agent keeps. */
  readonly transcript: ReadonlyArray<TurnRecord>
}

/** The row of the closed agent of that name, when the store has one. */
export const rowOf = Effect.fnUntraced(function*(store: StoreShape, name: string) {
  return yield* Effect.map(store.agent(name), Option.filter((row) => row.status === "closed"))
})

/** A closed agent's info, from its row and its own turns: as a sleeper's, but closed. */
export const infoOf = (row: AgentRow, turns: ReadonlyArray<TurnRow>): AgentInfo => ({
  ...recordInfo(row, turns),
  status: "closed",
  closedReason: row.closedReason ?? "closed",
  ...(row.closedAt === undefined ? {} : { closedAt: row.closedAt })
})

/** The closed agent of that name as the store has it, or none (never seen, live, or removed by retention). */
export const read = Effect.fnUntraced(function*(store: StoreShape, name: string, historyLimit: number) {
  return yield* Effect.flatMap(
    rowOf(store, name),
    (found) =>
      Option.isNone(found) ? Effect.succeedNone : Effect.map(store.turns(name), (all) => {
        const turns = ownTurns(found.value, all)
        return Option.some({
          info: infoOf(found.value, turns),
          transcript: turns.slice(-historyLimit).map((turn) => turn.record)
        })
      })
  )
})

/** `AgentNotFound` for a name no live agent has; it says when and why the agent was closed, if the store says. */
export const notFound = Effect.fnUntraced(
  function*(store: StoreShape, name: string, live: ReadonlyArray<string>) {
    return yield* Effect.flatMap(rowOf(store, name), (row) =>
      Effect.fail(
        new AgentNotFound({
          name,
          live,
          ...(Option.isNone(row) ? {} : {
            closed: {
              reason: row.value.closedReason ?? "closed",
              ...(row.value.closedAt === undefined ? {} : { at: row.value.closedAt })
            }
          })
        })
      ))
  }
)
