/**
 * Where a fork of an agent starts (`Agent.forkPoint`), from what it is and the turns it has: its last turn that
 * succeeded, or the turn asked for; a fork not yet told anything forks its own origin again; a conversation an agent
 * was given (`resume`) forks whole while nothing runs. Shared by a live agent and a sleeping one (read from the store).
 */
import { Effect, Option } from "effect"
import type { ForkPoint } from "../Agent.js"
import type { ForkOrigin, TurnRecord } from "../AgentView.js"
import { CannotFork, NoResult, TurnPending } from "../Errors.js"
import type { AgentOptions } from "./agentOptions.js"

export interface ForkSource {
  readonly name: string
  readonly lifecycle: "session" | "run"
  /** The options a fork takes: its own, with the permission in force and its turn timeout. */
  readonly options: AgentOptions
  readonly resumable: boolean
  readonly sessionId: string
  readonly forkedFrom: ForkOrigin | undefined
  /** A turn runs or waits: its session file is being written. */
  readonly busy: boolean
  /** Its turns' records, oldest first. */
  readonly turns: ReadonlyArray<TurnRecord>
  /** A succeeded turn's session (a `clear` since may have left it behind); none when its outcome cannot be read. */
  readonly sessionOf: (turnId: string) => Effect.Effect<Option.Option<string>>
}

/** The options a fork takes from its source: not its session, its lifecycle or its progress callbacks. */
export const forkOptions = (options: AgentOptions): AgentOptions => {
  const { lifecycle: _lifecycle, onActivity: _activity, resume: _resume, ...kept } = options
  return kept
}

export const forkPointOf = Effect.fnUntraced(function*(source: ForkSource, at: string | undefined) {
  return yield* Effect.suspend((): Effect.Effect<ForkPoint, NoResult | TurnPending | CannotFork> => {
    const { name, options } = source
    const cannot = (turnId: string | null, reason: string) => new CannotFork({ source: name, turnId, reason })
    if (source.lifecycle === "run") {
      return cannot(at ?? null, "it is a run, which takes one turn: fork a session (or spawn with its session id)")
    }
    const turn = at === undefined
      ? [...source.turns].reverse().find((t) => t.status === "succeeded")
      : source.turns.find((t) => t.turnId === at)
    if (at !== undefined && turn === undefined) return new NoResult({ name, turnId: at })
    if (turn === undefined && source.forkedFrom !== undefined && !source.resumable) {
      // A fork not yet told anything: its conversation is still its origin's, cut at the same place.
      const { messageId, sessionId } = source.forkedFrom
      return Effect.succeed({
        origin: { agent: name, turnId: null, sessionId, ...(messageId === undefined ? {} : { messageId }) },
        options
      })
    }
    if (turn === undefined) {
      // No turn of its own: a conversation it was given (`resume`) can still be taken whole, when nothing runs.
      if (!source.resumable || source.busy) return cannot(null, "it has no turn that succeeded yet")
      return Effect.succeed({ origin: { agent: name, turnId: null, sessionId: source.sessionId }, options })
    }
    const { messageId, status, turnId } = turn
    if (status === "queued" || status === "running") return new TurnPending({ name, turnId, status })
    if (status === "failed") {
      return cannot(turnId, `it failed (${turn.error?._tag ?? "error"}): fork at a turn that succeeded`)
    }
    if (messageId === undefined) return cannot(turnId, "the store does not say where that turn's conversation ends")
    return Effect.flatMap(source.sessionOf(turnId), (session) =>
      Option.isSome(session)
        ? Effect.succeed({ origin: { agent: name, turnId, sessionId: session.value, messageId }, options })
        : cannot(turnId, "its stored outcome could not be read"))
  })
})
