/**
 * The fleet-wide, append-only activity record: what each agent did, by sequence number. Reads are cursor
 * based; live subscribers get their own bounded queue so a slow one never blocks the fleet, and are told how
 * many entries they missed (they can read them back by cursor). Storage sits behind `ReportStore`.
 */
import { Chunk, Context, Effect, Layer, Option, Queue, Scope, Stream } from "effect"

export type ReportKind =
  | "spawned"
  | "turn_started"
  | "result"
  | "error"
  | "closed"
  | "crashed"
  | "restarted"
  | "permission"
  | (string & {})

export interface ReportEntry {
  readonly seq: number
  readonly at: string
  readonly agent: string
  readonly kind: ReportKind
  readonly turnId?: string
  readonly data: unknown
}

export interface ReportQuery {
  /** Entries strictly after this sequence number (default 0: from the start). */
  readonly since?: number
  readonly agent?: string
  readonly kinds?: ReadonlyArray<string>
  /** At most this many entries (default 100, at most 10,000). */
  readonly limit?: number
  /**
   * A tail read: the last this many matching entries (at most 10,000; `limit` is ignored), oldest first, and
   * `next` is the cursor after the newest entry in the log.
   */
  readonly last?: number
}

export interface ReportPage {
  readonly entries: ReadonlyArray<ReportEntry>
  /** The cursor to pass as `since` next time. */
  readonly next: number
}

/** What a live subscription delivers: entries, and a notice when its queue overflowed. */
export type ReportNotice =
  | { readonly _tag: "Entry"; readonly entry: ReportEntry }
  | { readonly _tag: "Missed"; readonly count: number; readonly after: number }

export interface SubscribeOptions {
  readonly agent?: string
  readonly kinds?: ReadonlyArray<string>
  /** Entries buffered for a slow subscriber before it starts missing some (default 1,024). */
  readonly capacity?: number
}

export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 10_000

const matches = (entry: ReportEntry, agent: string | undefined, kinds: ReadonlyArray<string> | undefined) =>
  (agent === undefined || entry.agent === agent) && (kinds === undefined || kinds.includes(entry.kind))

/**
 * The storage seam: memory now, a durable store later. Sequence numbers are assigned by the store. An append
 * is synchronous (it never waits: a durable store numbers the entry at once and writes it behind), because
 * agents post from their hot paths; reads are effects.
 */
export class ReportStore extends Context.Tag("@flotta/core/ReportStore")<ReportStore, {
  readonly append: (entry: Omit<ReportEntry, "seq" | "turnId"> & { readonly turnId: string | undefined }) => ReportEntry
  readonly read: (query: ReportQuery) => Effect.Effect<ReportPage>
}>() {
  /** Entries live in one array; `seq` is the index + 1, so a cursor read is a slice, not a search. */
  static readonly memory = Layer.sync(ReportStore, () => {
    const entries: Array<ReportEntry> = []
    return {
      append: (entry) => {
        // A literal (not a spread): appends are the log's hot path.
        const seq = entries.length + 1
        const full: ReportEntry = entry.turnId === undefined
          ? { seq, at: entry.at, agent: entry.agent, kind: entry.kind, data: entry.data }
          : { seq, at: entry.at, agent: entry.agent, kind: entry.kind, turnId: entry.turnId, data: entry.data }
        entries.push(full)
        return full
      },
      read: ({ agent, kinds, last, limit = DEFAULT_LIMIT, since = 0 }) =>
        Effect.sync(() => {
          if (last !== undefined) {
            // Walk back from the end: the cost is the tail read, not the whole log.
            const max = Math.max(1, Math.min(last, MAX_LIMIT))
            const out: Array<ReportEntry> = []
            const from = Math.max(0, since)
            for (let index = entries.length - 1; index >= from && out.length < max; index--) {
              if (matches(entries[index]!, agent, kinds)) out.push(entries[index]!)
            }
            return { entries: out.reverse(), next: Math.max(since, entries.length) }
          }
          const max = Math.max(1, Math.min(limit, MAX_LIMIT))
          const out: Array<ReportEntry> = []
          let index = Math.max(0, since)
          for (; index < entries.length && out.length < max; index++) {
            if (matches(entries[index]!, agent, kinds)) out.push(entries[index]!)
          }
          return { entries: out, next: Math.max(since, index) }
        })
    }
  })
}

interface Subscriber {
  readonly queue: Queue.Queue<ReportEntry>
  readonly agent: string | undefined
  readonly kinds: ReadonlyArray<string> | undefined
  /** Entries dropped since the queue last overflowed; while > 0 everything is dropped until it drains. */
  missed: number
  lastQueued: number
}

export class ReportLog extends Effect.Service<ReportLog>()("@flotta/core/ReportLog", {
  effect: Effect.gen(function*() {
    const store = yield* ReportStore
    const subscribers = new Set<Subscriber>()

    const fanOut = (entry: ReportEntry) => {
      for (const sub of subscribers) {
        if (!matches(entry, sub.agent, sub.kinds)) continue
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

    /** Appends one entry at `now` (Clock millis) and hands it to live subscribers, synchronously. */
    const unsafePost = (agent: string, kind: ReportKind, data: unknown, turnId: string | undefined, now: number) => {
      const entry = store.append({ at: isoAt(now), agent, kind, data, turnId })
      if (subscribers.size > 0) fanOut(entry)
      return entry
    }

    /** Appends one entry and hands it to live subscribers. Never blocks. */
    const post = (agent: string, kind: ReportKind, data: unknown = {}, turnId?: string): Effect.Effect<ReportEntry> =>
      Effect.clockWith((clock) =>
        Effect.sync(() => unsafePost(agent, kind, data, turnId, clock.unsafeCurrentTimeMillis()))
      )

    const reports = (query: ReportQuery = {}) => store.read(query)

    /**
     * A live feed. The subscription exists once this effect has run (not when the stream is first pulled),
     * so nothing posted after it is lost; it ends with the scope.
     */
    const subscribe = (
      options: SubscribeOptions = {}
    ): Effect.Effect<Stream.Stream<ReportNotice>, never, Scope.Scope> =>
      Effect.gen(function*() {
        const queue = yield* Queue.dropping<ReportEntry>(Math.max(1, options.capacity ?? 1024))
        const sub: Subscriber = { queue, agent: options.agent, kinds: options.kinds, missed: 0, lastQueued: 0 }
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

    return { post, unsafePost, reports, subscribe, stream } as const
  })
}) {}
