/**
 * The fleet-wide report log, as the cluster's `Flotta` serves it: the cluster store's, where every host copies its
 * own entries (see Replication), read by cursor and followed by polling it. A read fails with StoreUnavailable
 * when the cluster store does.
 */
import type { ReportNotice, ReportQuery, SubscribeOptions } from "@flotta/core/ReportLog"
import { Duration, Effect, Queue, Stream } from "effect"
import type { ClusterStoreShape } from "./ClusterStore.js"

const POLL = Duration.millis(200)
const PAGE = 1000

export const make = (store: ClusterStoreShape) => {
  const reports = (query: ReportQuery = {}) => store.reports(query)
  /** A read for the feed: one the store refuses is tried again, so a feed resumes once the store answers. */
  const retried = (query: ReportQuery) =>
    reports(query).pipe(
      Effect.tapError((error) =>
        Effect.zipRight(Effect.logWarning("the fleet's report log cannot be read", error), Effect.sleep(POLL))
      ),
      Effect.eventually
    )

  /** A live feed from the newest entry on, in a bounded queue that says how many entries it missed. */
  const subscribe = (options: SubscribeOptions = {}) =>
    Effect.gen(function*() {
      const queue = yield* Effect.acquireRelease(
        Queue.dropping<ReportNotice>(Math.max(1, options.capacity ?? 1024)),
        Queue.shutdown
      )
      let cursor = (yield* retried({ last: 1 })).next
      const filter = {
        ...(options.agent === undefined ? {} : { agent: options.agent }),
        ...(options.kinds === undefined ? {} : { kinds: options.kinds })
      }
      yield* Effect.gen(function*() {
        const page = yield* retried({ since: cursor, limit: PAGE, ...filter })
        for (const entry of page.entries) {
          if (!(yield* Queue.offer(queue, { _tag: "Entry", entry }))) {
            // Full: say what was missed once there is room; it can be read back by cursor.
            const after = cursor
            cursor = page.next
            yield* Queue.offer(queue, { _tag: "Missed", count: page.entries.length, after })
            return
          }
          cursor = entry.seq
        }
        cursor = page.next
        if (page.entries.length < PAGE) yield* Effect.sleep(POLL)
      }).pipe(Effect.forever, Effect.forkScoped)
      return Stream.fromQueue(queue)
    })

  return {
    reports,
    subscribe,
    stream: (options: SubscribeOptions = {}) => Stream.unwrapScoped(subscribe(options))
  } as const
}
