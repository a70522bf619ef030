/**
 * Reading a store straight from its file or database, beside a running fleet or without one: read-only, so no
 * lock is taken and nothing is written (`flotta reports --store`, `flotta transcript --store`, `flotta diff --store`,
 * `flotta runs --store`, `flotta doctor`), with the run records waiting in its inbox laid over it.
 */
import type { TurnRecord } from "@flotta/core/Agent"
import { RunNotFound } from "@flotta/core/Errors"
import { NoDiff, RunDiff, stateKey } from "@flotta/core/RunDiff"
import * as RunInbox from "@flotta/core/RunInbox"
import * as RunList from "@flotta/core/RunList"
import * as RunRecord from "@flotta/core/RunRecord"
import * as Sqlite from "@flotta/core/Sqlite"
import * as Store from "@flotta/core/Store"
import * as StoreConfig from "@flotta/core/StoreConfig"
import { Effect, Option, Schema } from "effect"
import * as fs from "node:fs"

/** The store has no agent of that name (it never had one, or retention removed it). */
export class NotInStore extends Schema.TaggedError<NotInStore>()("NotInStore", {
  name: Schema.String,
  location: Schema.String,
  known: Schema.Array(Schema.String)
}) {
  override get message() {
    const known = this.known.length === 0 ? "it holds no agents" : `it holds: ${this.known.join(", ")}`
    return `no agent named "${this.name}" in the store ${this.location} (${known})`
  }
}

/** Opens a store read-only for the scope. */
export const openReadOnly = Effect.fn("StoreAccess.openReadOnly")(function*(config: Store.StoreConfig) {
  return yield* StoreConfig.open(config, { readOnly: true })
})

/**
 * Opens a store read-only for the scope, with the run records waiting in its `inbox` (not imported yet) laid over it,
 * so that a shell run's record is never invisible (`RunRecord.overlay`).
 */
export const openWithInbox = Effect.fn("StoreAccess.openWithInbox")(
  function*(config: Store.StoreConfig, inbox: string | undefined) {
    const store = yield* openReadOnly(config)
    return inbox === undefined ? store : RunRecord.overlay(store, yield* RunInbox.records(inbox))
  }
)

/** Whether a store is there to read: memory never is (it lives in its host), an SQLite file once it exists. */
export const exists = (config: Store.StoreConfig): boolean =>
  config === "memory" ? false : "sqlite" in config ? fs.existsSync(config.sqlite) : true

/** What `doctor` finds: a store's info, or that its file is not made yet (the first serve makes it). */
export type Inspection =
  | { readonly _tag: "Found"; readonly info: Store.StoreInfo }
  | { readonly _tag: "NotCreated"; readonly location: string; readonly driver: string }
  | { readonly _tag: "Memory" }

export const inspect = Effect.fn("StoreAccess.inspect")(function*(config: Store.StoreConfig) {
  if (config === "memory") return { _tag: "Memory" } as const
  if ("sqlite" in config && !fs.existsSync(config.sqlite)) {
    // The first serve makes the file; what can be checked now is that its SQLite driver loads.
    return yield* Effect.map(
      Sqlite.driver(config.sqlite),
      (driver): Inspection => ({ _tag: "NotCreated", location: config.sqlite, driver })
    )
  }
  return yield* Effect.scoped(
    Effect.flatMap(
      openReadOnly(config),
      (store) => Effect.map(store.info, (info): Inspection => ({ _tag: "Found", info }))
    )
  )
})

/**
 * An agent's transcript from the store: its turns' records, oldest first (`last` keeps the newest ones); only the
 * last agent of the name's own turns, and when it is closed, why and when.
 */
export const transcript = Effect.fn("StoreAccess.transcript")(
  function*(store: Store.StoreShape, name: string, last?: number) {
    const agent = yield* store.agent(name)
    const all = yield* store.turns(name)
    if (Option.isNone(agent) && all.length === 0) {
      const agents = yield* store.agents
      const info = yield* store.info
      return yield* new NotInStore({ name, location: info.location, known: agents.map((a) => a.name).sort() })
    }
    const rows = Option.match(agent, { onNone: () => all, onSome: (row) => Store.ownTurns(row, all) })
    const turns: ReadonlyArray<TurnRecord> = rows.map((row) => row.record)
    const closed = Option.filter(agent, (row) => row.status === "closed")
    return {
      name,
      total: turns.length,
      turns: last === undefined ? turns : turns.slice(-last),
      ...(Option.isNone(closed) ? {} : {
        closed: {
          reason: closed.value.closedReason ?? "closed",
          ...(closed.value.closedAt === undefined ? {} : { at: closed.value.closedAt })
        }
      })
    }
  }
)

const decodeDiff = Schema.decodeUnknownOption(RunDiff)

/** A run's recorded diff from the store: NoDiff for a run the store knows without one, else RunNotFound. */
export const diff = Effect.fn("StoreAccess.diff")(function*(store: Store.StoreShape, name: string) {
  const recorded = Option.flatMap(yield* store.loadState(stateKey(name)), decodeDiff)
  if (Option.isSome(recorded)) return recorded.value
  const known = Option.isSome(yield* store.run(name)) || (yield* store.agents).some((a) => a.name === name)
  return yield* (known ? new NoDiff({ name }) : new RunNotFound({ name }))
})

/** The runs and verifies the store keeps, newest first, as `flotta runs` lists them. */
export const runs = Effect.fn("StoreAccess.runs")(function*(store: Store.StoreShape, query: RunList.RunQuery) {
  return RunList.selectRuns((yield* store.runs).map((row) => RunList.viewOf(row)), query)
})
