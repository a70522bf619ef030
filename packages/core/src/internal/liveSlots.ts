/**
 * The fleet's budget of live claude processes (`maxLive`). Every process start takes a slot first, and gives it
 * back when its process ends. A start that finds none free hibernates the session idle the longest (least recently
 * used) and takes its slot; with no session idle, it waits until one is, or until a process ends. Starts are served
 * one at a time in arrival order (a queue of one token, as `admission` does), so they are admitted in order and
 * two never pick the same session.
 */
import { Deferred, Effect, Exit, FiberId, Queue, Scope } from "effect"

/** A session the budget may hibernate to make room. */
export interface Member {
  /** Since when (Clock millis) it has been idle with a live process; null while it is not (working, starting...). */
  readonly idleSince: () => number | null
  /** Ends its process cleanly to make room: false when it was no longer idle. */
  readonly hibernate: (reason: string) => Effect.Effect<boolean>
}

export interface LiveSlots {
  /**
   * Waits for a slot (hibernating the longest idle session when none is free) and holds it until `scope` closes:
   * the slot comes back when the process it was taken for ends.
   */
  readonly acquire: (scope: Scope.Scope) => Effect.Effect<void>
  /** A session joins the candidates for hibernation; the function that takes it out again. */
  readonly join: (name: string, member: Member) => () => void
  /** Something a waiting start may care about changed (a session became idle). */
  readonly kick: () => void
  /** Processes live (or starting) now. */
  readonly live: () => number
  readonly max: number
}

export const make = Effect.fnUntraced(function*(max: number) {
  let live = 0
  const members = new Map<string, Member>()
  let changed = Deferred.unsafeMake<void>(FiberId.none)
  const kick = () => {
    const done = changed
    changed = Deferred.unsafeMake<void>(FiberId.none)
    Deferred.unsafeDone(done, Exit.void)
  }
  const turn = yield* Queue.bounded<void>(1)
  yield* Queue.offer(turn, undefined)

  /** The session idle the longest, if any (`passed`: ones that said no this time). */
  const longestIdle = (passed: ReadonlySet<Member>) => {
    let pick: { readonly member: Member; readonly since: number } | undefined
    for (const member of members.values()) {
      const since = passed.has(member) ? null : member.idleSince()
      if (since !== null && (pick === undefined || since < pick.since)) pick = { member, since }
    }
    return pick?.member
  }

  const release = Effect.sync(() => {
    live--
    kick()
  })

  const take = (passed: Set<Member>): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (live < max) {
        live++
        return Effect.void
      }
      const wait = changed
      const victim = longestIdle(passed)
      if (victim === undefined) return Effect.zipRight(Deferred.await(wait), take(new Set()))
      return victim.hibernate(`to make room: ${max} live processes at most (maxLive)`).pipe(
        // Its process is ending: its slot comes back when it has. One no longer idle is passed over.
        Effect.flatMap((hibernated) => {
          if (hibernated) return Effect.zipRight(Deferred.await(wait), take(new Set()))
          passed.add(victim)
          return take(passed)
        })
      )
    })

  const acquire = (scope: Scope.Scope) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.zipRight(
        restore(Queue.take(turn)),
        restore(take(new Set())).pipe(
          Effect.zipRight(Scope.addFinalizer(scope, release)),
          Effect.ensuring(Queue.offer(turn, undefined))
        )
      )
    )

  return {
    acquire,
    join: (name, member) => {
      members.set(name, member)
      return () => {
        if (members.get(name) === member) members.delete(name)
      }
    },
    kick,
    live: () => live,
    max
  } satisfies LiveSlots
})
