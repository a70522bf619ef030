/**
 * `/events`: the report log as server-sent events, a streamed response. Each entry's `id` is its `seq`, so a
 * browser that reconnects (sending `Last-Event-ID`, or `?since=` when the page opens a new stream) gets exactly
 * what it missed, read back from the store, and then the live feed. The subscription is made before the read, so
 * nothing posted between the two is lost, and entries at or below the last one sent are skipped, so nothing is
 * sent twice. A client too slow for the live feed is told of a gap by its subscription: the gap is filled from
 * the store, and the socket's backpressure, not a buffer, holds what it has not read. A streaming agent's
 * pieces of text (`text_delta`, never kept) go out as `delta` events without an id: they move no cursor.
 */
import { HttpServerResponse } from "@effect/platform"
import * as EngineEvents from "@flotta/core/EngineEvents"
import { Flotta } from "@flotta/core/Flotta"
import { MAX_LIMIT } from "@flotta/core/ReportLog"
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Effect, Mailbox, Option, Schema, Stream } from "effect"
import { summary } from "./Views.js"

const encoder = new TextEncoder()

/**
 * An entry's event, encoded once however many pages follow the log: every subscriber is handed the same entry
 * object, so the bytes are kept beside it for as long as the entry lives.
 */
const frames = new WeakMap<ReportEntry, Uint8Array>()
const frameOf = (entry: ReportEntry) => {
  let frame = frames.get(entry)
  if (frame === undefined) {
    // With its line for the reports table, so the page shows it by the server's rules (`Views.summary`).
    const data = JSON.stringify({ ...entry, summary: summary(entry) })
    frame = encoder.encode(`id: ${entry.seq}\nevent: entry\ndata: ${data}\n\n`)
    frames.set(entry, frame)
  }
  return frame
}

/** A live-only entry: no id, so a reconnect's `Last-Event-ID` stays the last kept entry's. */
const deltaOf = (entry: ReportEntry) => encoder.encode(`event: delta\ndata: ${JSON.stringify(entry)}\n\n`)

const RETRY = encoder.encode("retry: 1000\n\n")
const PING = encoder.encode(": ping\n\n")

/** A cursor as sent: a whole number, nothing else (surrounding spaces aside). */
const Cursor = Schema.compose(Schema.Trim, Schema.String.pipe(Schema.pattern(/^\d+$/))).pipe(
  Schema.compose(Schema.NumberFromString)
)
const decodeCursor = Schema.decodeUnknownOption(Cursor)

/** The cursor a request resumes from: `Last-Event-ID` (the browser's own reconnect) wins over `?since=`. */
export const cursorOf = (lastEventId: string | undefined, since: string | null): number | undefined =>
  Option.getOrUndefined(Option.orElse(decodeCursor(lastEventId), () => decodeCursor(since)))

/** Frames waiting for the socket, at most: beyond that the feed waits, and the subscription reports a gap. */
const BACKLOG = 1024

/** The log from `cursor` on, then live, as the response's stream; it ends when the client goes. */
export const stream = Effect.fn("Events.stream")(function*(cursor: number | undefined) {
  return yield* Effect.map(Flotta, (fleet) =>
    HttpServerResponse.stream(
      Stream.unwrapScoped(Effect.gen(function*() {
        const live = yield* fleet.subscribe({ capacity: 4096 })
        // One buffer the socket drains in bulk: frames posted meanwhile go out together.
        const out = yield* Mailbox.make<Uint8Array>({ capacity: BACKLOG })
        yield* out.offer(RETRY)
        let last = cursor ?? -1

        const fresh = (entry: ReportEntry) => {
          if (entry.seq <= last) return false
          last = entry.seq
          return true
        }

        /** Everything after `last` in the store, page by page. */
        const catchUp = Effect.gen(function*() {
          for (;;) {
            const page = yield* fleet.reports({ since: Math.max(0, last), limit: MAX_LIMIT })
            yield* out.offerAll(page.entries.filter(fresh).map(frameOf))
            if (page.entries.length < MAX_LIMIT) return
          }
        })

        const feed = Stream.runForEachChunk(live, (notices) =>
          Effect.gen(function*() {
            let frames: Array<Uint8Array> = []
            for (const notice of notices) {
              if (notice._tag === "Entry") {
                if (notice.entry.kind === EngineEvents.textDelta.kind) frames.push(deltaOf(notice.entry))
                else if (fresh(notice.entry)) frames.push(frameOf(notice.entry))
                continue
              }
              // A gap (this client fell behind the fleet) is filled from the store, not merely announced.
              yield* out.offerAll(frames)
              frames = []
              if (last < 0) last = notice.after
              yield* catchUp
            }
            yield* out.offerAll(frames)
          }))
        yield* (cursor === undefined ? feed : Effect.zipRight(catchUp, feed)).pipe(Effect.forkScoped)
        // Comments keep proxies and the browser from timing the stream out while the fleet is quiet.
        yield* out.offer(PING).pipe(Effect.delay("15 seconds"), Effect.forever, Effect.forkScoped)
        return Mailbox.toStream(out)
      })),
      {
        contentType: "text/event-stream; charset=utf-8",
        headers: { "cache-control": "no-store", connection: "keep-alive", "x-accel-buffering": "no" }
      }
    ))
})
