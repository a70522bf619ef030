/**
 * The store a config names: memory, an SQLite file or a Postgres database. The durable stores are loaded only
 * when named, so a fleet in memory never loads a database driver.
 */
import { Context, Effect, Layer } from "effect"
import type { StoreError } from "./Errors.js"
import { Store } from "./Store.js"
import type { StoreConfig, StoreOptions } from "./Store.js"

export type { StoreConfig, StoreOptions } from "./Store.js"

/** The store a config names (memory when none). */
export const layer = (config: StoreConfig | undefined, options: StoreOptions = {}): Layer.Layer<Store, StoreError> => {
  if (config === undefined || config === "memory") return Store.memory
  if ("sqlite" in config) {
    const file = config.sqlite
    return Layer.unwrapEffect(
      Effect.promise(() => import("./SqliteStore.js")).pipe(
        Effect.map((sqlite) => sqlite.layer(file, options))
      )
    )
  }
  const target = config.postgres
  return Layer.unwrapEffect(
    Effect.promise(() => import("./PostgresStore.js")).pipe(
      Effect.map((postgres) => postgres.layer(target, options))
    )
  )
}

/** The effect that opens a store, for tools that read it without a fleet (`flotta reports --store`). */
export const open = Effect.fnUntraced(function*(config: StoreConfig, options: StoreOptions = {}) {
  return yield* Layer.build(layer(config, options)).pipe(Effect.map((context) => Context.get(context, Store)))
})
