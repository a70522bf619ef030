/**
 * GitHub's delivery ids already handled, kept in the store (`github/deliveries`), so a redelivery (by hand, or
 * GitHub's own retry) fires nothing twice, across restarts too. One delivery is handled at a time: two copies
 * arriving together cannot both fire.
 */
import type { HttpServerResponse } from "@effect/platform"
import { HttpServerResponse as Response } from "@effect/platform"
import type { StoreShape } from "@flotta/core/Store"
import { Effect, Option, Schema } from "effect"

export const STATE_KEY = "github/deliveries"

/** Delivery ids remembered: GitHub lets a delivery be redelivered for days; this many is weeks of a busy repo. */
const KEPT = 10_000

const Kept = Schema.Struct({ ids: Schema.Array(Schema.String) })

export interface Deliveries {
  /** Runs `handle` for a delivery id not seen before; a repeat is answered 200 and fires nothing. */
  readonly once: <E, R>(
    id: string,
    handle: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
}

export const make = Effect.fn("deliveries.make")(
  function*(store: Pick<StoreShape, "loadState" | "saveState">, repeated: (id: string) => Effect.Effect<void>) {
    const loaded = Option.flatMap(yield* store.loadState(STATE_KEY), Schema.decodeUnknownOption(Kept))
    const ids: Array<string> = Option.match(loaded, { onNone: () => [], onSome: (kept) => [...kept.ids] })
    const seen = new Set(ids)
    const lock = yield* Effect.makeSemaphore(1)
    return {
      once: (id, handle) =>
        lock.withPermits(1)(Effect.suspend(() => {
          if (seen.has(id)) {
            return Effect.as(
              repeated(id),
              Response.unsafeJson({ ok: true, delivery: id, duplicate: true, fired: [] }, { status: 200 })
            )
          }
          return Effect.tap(handle, (response) =>
            Effect.sync(() => {
              // A delivery refused for its shape may come again fixed; one handled may not.
              if (response.status >= 400) return
              seen.add(id)
              ids.push(id)
              if (ids.length > KEPT) seen.delete(ids.shift()!)
              store.saveState(STATE_KEY, { ids })
            }))
        }))
    } satisfies Deliveries
  }
)
