/**
 * An agent's turns as its store gave them back after a restart of the host: finished ones keep their outcome
 * (decoded, for `result` and `await`), queued ones wait again in order, and the turn numbers go on from there.
 * Only its own: the store keeps the turns of earlier agents of the same name under that name too
 * (`Store.ownTurns`).
 */
import { Deferred, Exit, FiberId, Option, Schema } from "effect"
import { TurnResult } from "../AgentView.js"
import type { TurnRow } from "../AgentView.js"
import { TurnErrorSchema } from "../Errors.js"
import type { TurnError } from "../Errors.js"
import type { AgentContext, Turn } from "./agentState.js"
import * as Budget from "./budget.js"
import * as TurnRecord from "./turnRecord.js"

const decodeError = Schema.decodeUnknownOption(TurnErrorSchema)
const decodeResult = Schema.decodeUnknownOption(TurnResult)

/** A finished stored turn's outcome, decoded: its result or its typed error (none when it cannot be read). */
export const outcomeOf = (row: TurnRow): Option.Option<Exit.Exit<TurnResult, TurnError>> =>
  row.record.status === "succeeded"
    ? Option.map(decodeResult(row.result), (result) => Exit.succeed(result))
    : Option.map(decodeError(row.error), (error) => Exit.fail(error))

/** Takes the stored turns back into the agent's history, its queue and its totals. */
export const restoreTurns = (
  ctx: AgentContext,
  history: Map<string, Turn>,
  rows: ReadonlyArray<TurnRow>,
  now: number
): void => {
  const { state } = ctx
  for (const row of rows) {
    const turn = TurnRecord.make({
      id: row.record.turnId,
      text: row.record.prompt,
      timeoutMs: row.timeoutMs,
      deadlineAt: null,
      deferred: Deferred.unsafeMake(FiberId.none),
      parentSpan: Option.none()
    }, now)
    Object.assign(turn.record, TurnRecord.mutable(row.record))
    state.turnCounter = Math.max(state.turnCounter, row.n)
    // How full its context was after its last turn that said.
    if (row.record.context !== undefined) {
      state.context = row.record.context
      state.contextWindow = row.record.context.window
    }
    history.set(turn.id, turn)
    if (row.record.status === "queued") {
      ctx.queue.push(turn)
      continue
    }
    if (row.record.finishedAt !== null) Budget.count(state.spend, row.record.costUsd, row.record.finishedAt)
    if (row.record.status === "succeeded") {
      state.finished++
      state.totalCost += row.record.costUsd
    } else {
      state.failed++
    }
    const outcome = outcomeOf(row)
    Deferred.unsafeDone(
      turn.deferred,
      Option.getOrElse(outcome, () =>
        Exit.die(
          new Error(`turn ${turn.id}: ${row.record.error?.message ?? "its stored outcome could not be read"}`)
        ))
    )
  }
}
