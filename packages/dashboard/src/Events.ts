/**
 * `/events`: the report log as server-sent events. Each entry's `id` is its `seq`, so a browser that reconnects
 * (sending `Last-Event-ID`, or `?since=` when the page opens a new stream) gets exactly what it missed, read back
 * from the store, and then the live feed. The subscription is made before the read, so nothing posted between
 * the two is lost, and entries at or below the last one sent are skipped, so nothing is sent twice.
 */
import { Flotta } from "@flotta/core/Flotta"
import { MAX_LIMIT } from "@flotta/core/ReportLog"
import type { ReportEntry } from "@flotta/core/ReportLog"
import { Effect, Schedule, Stream } from "effect"
import type * as http from "node:http"

/** A client this far behind (bytes buffered in the socket) is cut off; it reconnects and catches up by cursor. */
const MAX_BUFFERED = 4 * 1024 * 1024

/**
 * An entry's event, written once however many pages follow the log: every subscriber is handed the same entry
 * object, so the text is kept beside it for as long as the entry lives.
 */
const frames = new WeakMap<ReportEntry, string>()
const frameOf = (entry: ReportEntry) => {
  let frame = frames.get(entry)
  if (frame === undefined) {
    frame = `id: ${entry.seq}\nevent: entry\ndata: ${JSON.stringify(entry)}\n\n`
    frames.set(entry, frame)
  }
  return frame
}

/** The cursor a request resumes from: `Last-Event-ID` (the browser's own reconnect) wins over `?since=`. */
export const cursorOf = (request: http.IncomingMessage, url: URL): number | undefined => {
  for (const raw of [request.headers["last-event-id"], url.searchParams.get("since")]) {
    const value = Array.isArray(raw) ? raw[0] : raw
    if (value !== undefined && value !== null && /^\d+$/.test(value.trim())) return Number(value.trim())
  }
  return undefined
}

/** Streams the log into `response` until the client goes or the scope closes. */
export const stream = (response: http.ServerResponse, cursor: number | undefined) =>
  Effect.gen(function*() {
    const fleet = yield* Flotta
    const live = yield* fleet.subscribe({ capacity: 4096 })
    response.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no"
    })
    response.write("retry: 1000\n\n")
    let last = cursor ?? -1

    const send = (entry: ReportEntry) => {
      if (entry.seq <= last || response.writableEnded) return
      last = entry.seq
      response.write(frameOf(entry))
      if (response.writableLength > MAX_BUFFERED) response.end()
    }

    /** Everything after `last` in the store, page by page. */
    const catchUp = Effect.gen(function*() {
      for (;;) {
        const page = yield* fleet.reports({ since: Math.max(0, last), limit: MAX_LIMIT })
        for (const entry of page.entries) send(entry)
        if (page.entries.length < MAX_LIMIT || response.writableEnded) return
      }
    })

    if (cursor !== undefined) yield* catchUp
    // Comments keep proxies and the browser from timing the stream out while the fleet is quiet.
    yield* Effect.sync(() => response.writableEnded || response.write(": ping\n\n")).pipe(
      Effect.repeat(Schedule.spaced("15 seconds")),
      Effect.delay("15 seconds"),
      Effect.forkScoped
    )
    yield* Stream.runForEach(live, (notice) =>
      // A gap (this client fell behind the fleet) is filled from the store, not merely announced.
      notice._tag === "Entry"
        ? Effect.sync(() => send(notice.entry))
        : Effect.suspend(() => {
          if (last < 0) last = notice.after
          return catchUp
        }))
  })
