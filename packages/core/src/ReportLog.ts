/**
 * The fleet-wide, append-only activity record: what each agent did, by sequence number. Reads are cursor
 * based; live subscribers get their own bounded queue so a slow one never blocks the fleet, and are told how
 * many entries they missed (they can read them back by cursor). Storage is the `Store`'s.
 */
import { Chunk, Effect, Option, Queue, Stream } from "effect"
import type { Scope } from "effect"
import type { EngineData, EngineKind } from "./EngineEvents.js"
import { matches } from "./internal/reportQuery.js"
import type { ReportEntry, ReportQuery } from "./internal/reportQuery.js"
import type { Kind } from "./ReportEvent.js"
import { Store } from "./Store.js"

export { DEFAULT_LIMIT, MAX_LIMIT, reportWhere } from "./internal/reportQuery.js"
export type { ReportEntry, ReportKind, ReportPage, ReportQuery } from "./internal/reportQuery.js"

/** What a live subscription delivers: entries, and a notice when its queue overflowed. */
export type ReportNotice =
  | { readonly _tag: "Entry"; readonly entry: ReportEntry }
  | { readonly _tag: "Missed"; readonly count: number; readonly after: number }

export interface SubscribeOptions {
  readonly agent?: string
  readonly kinds?: ReadonlyArray<string>
  /** Entries buffered for a slow subscriber before it starts missing some (default 1,024). */
  readonly capacity?: number
  /** Only entries the log keeps: no live-only ones (a streaming agent's `text_delta`). */
  readonly keptOnly?: boolean
}

/**
 * How a post names its kind: an engine kind by name (its data checked against `ReportEvent`'s Schema for it), or a
 * kind a package declared with `ReportEvent.kind`.
 */
export interface Post<R> {
  <K extends EngineKind>(agent: string, kind: K, data: EngineData[K], turnId?: string): R
  <K extends string, A>(agent: string, kind: Kind<K, A>, data: NoInfer<A>, turnId?: string): R
}
/** The same, synchronous, at a given time (Clock millis): for the turn's path. */
export interface UnsafePost<R> {
  <K extends EngineKind>(agent: string, kind: K, data: EngineData[K], turnId: string | undefined, now: number): R
  <K extends string, A>(agent: string, kind: Kind<K, A>, data: NoInfer<A>, turnId: string | undefined, now: number): R
}

const nameOf = (kind: string | Kind<string, unknown>) => typeof kind === "string" ? kind : kind.kind

interface Subscriber {
  readonly queue: Queue.Queue<ReportEntry>
  readonly agent: string | undefined
  readonly kinds: ReadonlyArray<string> | undefined
  readonly keptOnly: boolean
  /** Entries dropped since the queue last overflowed; while > 0 everything is dropped until it drains. */
  missed: number
  lastQueued: number
}

export class ReportLog extends Effect.Service<ReportLog>()("@flotta/core/ReportLog", {
  scoped: Effect.gen(function*() {
    const store = yield* Store
    const subscribers = new Set<Subscriber>()

    const fanOut = (entry: ReportEntry, kept = true) => {
      for (const sub of subscribers) {
        if ((!kept && sub.keptOnly) || !matches(entry, sub.agent, sub.kinds)) continue
        if (sub.missed > 0 || !Queue.unsafeOffer(sub.queue, entry)) sub.missed++
        else sub.lastQueued = entry.seq
      }
    }

    // One ISO string per millisecond: many entries share one, and formatting a Date is not free.
    let lastMillis = -1
    let lastIso = ""
    const isoAt = (millis: number) => {
      if (millis !== lastMillis) {
        lastMillis = millis
        lastIso = new Date(millis).toISOString()
      }
      return lastIso
    }

    let newest = 0
    /** Appends one entry at `now` (Clock millis) and hands it to live subscribers, synchronously. */
    const append = (agent: string, kind: string, data: unknown, turnId: string | undefined, now: number) => {
      const entry = store.appendReport({ at: isoAt(now), agent, kind, data, turnId })
      newest = entry.seq
      if (subscribers.size > 0) fanOut(entry)
      return entry
    }
    const unsafePost: UnsafePost<ReportEntry> = (
      agent: string,
      kind: string | Kind<string, unknown>,
      data: unknown,
      turnId: string | undefined,
      now: number
    ) => append(agent, nameOf(kind), data, turnId, now)

    /**
     * Appends entries made elsewhere (an imported run's, see `RunRecord`), each at the time it says, numbered here in
     * order and handed to live subscribers, synchronously.
     */
    const unsafeReplay = (
      drafts: ReadonlyArray<Pick<ReportEntry, "at" | "agent" | "kind" | "turnId" | "data">>
    ) => {
      for (const draft of drafts) {
        const entry = store.appendReport({ ...draft, turnId: draft.turnId })
        newest = entry.seq
        if (subscribers.size > 0) fanOut(entry)
      }
    }

    // The store's health is news: a degraded store (a full disk, say) and its recovery are in the log.
    const clock = yield* Effect.clock
    const stopWatching = store.onHealth((health) =>
      unsafePost(
        "store",
        health.state === "degraded" ? "store_degraded" : "store_recovered",
        health,
        undefined,
        clock.unsafeCurrentTimeMillis()
      )
    )
    yield* Effect.addFinalizer(() => Effect.sync(stopWatching))

    /**
     * Hands an entry to live subscribers only, never kept: a streamed piece of text, whose whole is kept when it
     * comes. Its `seq` is that of the newest entry kept before it (it has none of its own), so a cursor never skips.
     */
    const unsafeFlash: UnsafePost<void> = (
      agent: string,
      kind: string | Kind<string, unknown>,
      data: unknown,
      turnId: string | undefined,
      now: number
    ) => {
      if (subscribers.size === 0) return
      fanOut({
        seq: newest,
        at: isoAt(now),
        agent,
        kind: nameOf(kind),
        data,
        ...(turnId === undefined ? {} : { turnId })
      }, false)
    }

    /** Appends one entry and hands it to live subscribers. Never blocks. Untraced: it is on every turn's path. */
    const post: Post<Effect.Effect<ReportEntry>> = (
      agent: string,
      kind: string | Kind<string, unknown>,
      data: unknown,
      turnId?: string
    ): Effect.Effect<ReportEntry> =>
      Effect.clockWith((clock) =>
        Effect.sync(() => append(agent, nameOf(kind), data, turnId, clock.unsafeCurrentTimeMillis()))
      )

    const reports = Effect.fn("ReportLog.reports")((query: ReportQuery = {}) => store.readReports(query))

    /**
     * A live feed. The subscription exists once this effect has run (not when the stream is first pulled),
     * so nothing posted after it is lost; it ends with the scope.
     */
    const subscribe = Effect.fn("ReportLog.subscribe")(function*(
      options: SubscribeOptions = {}
    ): Effect.fn.Return<Stream.Stream<ReportNotice>, never, Scope.Scope> {
      const queue = yield* Queue.dropping<ReportEntry>(Math.max(1, options.capacity ?? 1024))
      const sub: Subscriber = {
        queue,
        agent: options.agent,
        kinds: options.kinds,
        keptOnly: options.keptOnly === true,
        missed: 0,
        lastQueued: 0
      }
      yield* Effect.acquireRelease(
        Effect.sync(() => subscribers.add(sub)),
        () => Effect.sync(() => subscribers.delete(sub)).pipe(Effect.zipRight(Queue.shutdown(queue)))
      )
      return Stream.repeatEffectChunk(
        Queue.takeBetween(queue, 1, 4096).pipe(
          Effect.map((chunk) => {
            const out = Chunk.map(chunk, (entry): ReportNotice => ({ _tag: "Entry", entry }))
            // Report a gap only once the queue has drained, which is where it sits in sequence order.
            if (sub.missed === 0 || Option.getOrElse(queue.unsafeSize(), () => 0) > 0) return out
            const missed: ReportNotice = { _tag: "Missed", count: sub.missed, after: sub.lastQueued }
            sub.missed = 0
            return Chunk.append(out, missed)
          })
        )
      )
    })

    /** The same feed as a stream that subscribes when it starts. */
    const stream = (options: SubscribeOptions = {}): Stream.Stream<ReportNotice> =>
      Stream.unwrapScoped(subscribe(options))

    return { post, unsafePost, unsafeFlash, unsafeReplay, reports, subscribe, stream } as const
  })
}) {}
