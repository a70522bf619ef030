/**
 * How a shell `flotta run` is recorded in the project's store, as a serve's run is, without ever contending with the
 * serve for it. The run goes on in memory (`run`: started async, awaited, stopped and still recorded on Ctrl-C); as it
 * ends its record (`RunRecord`) is written into the store's inbox (`RunInbox`, durable at once), then landed (`land`):
 * imported here when the store is free (held only for that moment, so a serve starting meanwhile waits for it), or
 * left to the serve that holds the store, which imports it within moments. What is not imported yet stays in the inbox
 * and lands later (any host imports it as it starts); readers of the store consult it meanwhile (`StoreAccess`).
 *
 * Where: the inbox of the store `serve` would use (`StoreTarget.inboxOf`). A memory store keeps nothing, so a run there
 * is not recorded.
 */
import { FileSystem } from "@effect/platform"
import type { Flotta } from "@flotta/core/Flotta"
import type { RunOptions } from "@flotta/core/Run"
import { isOwnAgent } from "@flotta/core/RunAttempts"
import * as RunInbox from "@flotta/core/RunInbox"
import * as RunRecord from "@flotta/core/RunRecord"
import { RunNameTaken, RunRecords } from "@flotta/core/RunRecord"
import * as Store from "@flotta/core/Store"
import * as StoreConfig from "@flotta/core/StoreConfig"
import { Clock, Effect, Either, Option } from "effect"
import * as path from "node:path"
import * as Composition from "./Composition.js"
import type { LoadedConfig } from "./ConfigFile.js"
import * as Output from "./Output.js"
import * as StoreTarget from "./StoreTarget.js"

/** Where a shell run of this config is recorded: the store `serve` would use, and its inbox. */
export interface Recording {
  readonly store: Store.StoreConfig
  readonly options: Store.StoreOptions
  readonly inbox: string
  /** The store, for people. */
  readonly location: string
}

export const recordingFor = (config: LoadedConfig): Option.Option<Recording> => {
  const store = StoreTarget.storeFor(config, true)
  const inbox = StoreTarget.inboxOf(store, config.dir)
  return inbox === undefined ? Option.none() : Option.some({
    store,
    options: Composition.storeOptions(config),
    inbox,
    location: Store.describeConfig(store)
  })
}

/**
 * Refuses a name the store (or its inbox) holds already, before the run starts: its record could not land. A store
 * that cannot be read now says nothing here (the run goes on, and its record waits for the store).
 */
export const checkName = Effect.fn("RunRecording.checkName")(function*(recording: Recording, name: string) {
  const waiting = yield* RunInbox.records(recording.inbox)
  if (waiting.some((record) => record.name === name)) {
    return yield* new RunNameTaken({ name, holder: `a run of that name waits in ${recording.inbox} to be recorded` })
  }
  const held = yield* Effect.scoped(Effect.gen(function*() {
    const store = yield* StoreConfig.open(recording.store, { readOnly: true })
    const run = yield* store.run(name)
    if (Option.isSome(run)) {
      return Option.some(`the store has a run of that name already, started ${run.value.startedAt}`)
    }
    const agents = yield* store.agents
    return agents.some((agent) => agent.name === name)
      ? Option.some(`the store has an agent named "${name}" already`)
      : Option.none()
  })).pipe(Effect.orElseSucceed(() => Option.none<string>()))
  if (Option.isSome(held)) return yield* new RunNameTaken({ name, holder: held.value })
})

/** What became of a run's record. */
export type Kept =
  | { readonly _tag: "Recorded" }
  | { readonly _tag: "Waiting"; readonly file: string; readonly reason: string }
  | { readonly _tag: "Rejected"; readonly file: string; readonly reason: string }
  | { readonly _tag: "Lost"; readonly reason: string }

/** The run's agent and its attempts that are live now. */
const ownAgents = (fleet: Flotta, name: string) =>
  Effect.map(fleet.list(), (agents) => agents.map((agent) => agent.name).filter((n) => isOwnAgent(name, n)))

/**
 * Runs `options` in `fleet` (async, then awaited, so that the fleet keeps its row as a serve's run's), and writes its
 * record into the inbox as it ends, however it ends. Interrupted (Ctrl-C), the run's turns are interrupted first, so
 * it ends (as TurnInterrupted) and is recorded before the fleet goes.
 */
export const run = Effect.fn("RunRecording.run")(
  function*(fleet: Flotta, options: RunOptions, recording: Option.Option<Recording>) {
    const records = yield* RunRecords
    const name = yield* fleet.runAsync(options)
    /** The record into the inbox: a path, or why not. */
    const written = Option.match(recording, {
      onNone: () => Effect.succeed(Either.left("the store is memory: nothing is kept")),
      onSome: (where) =>
        records.exportRun(name).pipe(
          Effect.flatMap((record) => RunInbox.write(where.inbox, record)),
          Effect.mapError((error) => error.message),
          Effect.either
        )
    })
    // Stopped: its turns interrupted, it ends and is recorded (and landed, as the command goes no further).
    const stop = ownAgents(fleet, name).pipe(
      Effect.flatMap((names) => Effect.forEach(names, (n) => Effect.ignore(fleet.interrupt(n)), { discard: true })),
      Effect.zipRight(Effect.timeout(Effect.exit(fleet.awaitRun(name)), "20 seconds")),
      Effect.zipRight(written),
      Effect.flatMap((file) =>
        Either.isLeft(file) || Option.isNone(recording) ? Effect.void : land(recording.value, file.right).pipe(
          Effect.flatMap((kept) => Output.stderr(describeKept(kept, name, recording.value, false)))
        )
      ),
      Effect.ignore
    )
    const exit = yield* fleet.awaitRun(name).pipe(Effect.exit, Effect.onInterrupt(() => stop))
    // Once it ended, nothing stops its record half-written.
    return { name, exit, written: yield* Effect.uninterruptible(written) }
  }
)

const RETRY = "100 millis"
/** How long a run waits for the host of its store to import its record before it says it waits in the inbox. */
const HOST_WAIT_MS = 5_000

/**
 * Lands a record written to `file`: imported here when the store is free (every record waiting there with it), or by
 * the store's host, which is waited for a few seconds; else it waits in the inbox, and this says why.
 */
export const land = Effect.fn("RunRecording.land")(function*(recording: Recording, file: string) {
  const fs = yield* FileSystem.FileSystem
  const rejected = path.join(recording.inbox, RunInbox.REJECTED, path.basename(file))
  const until = (yield* Clock.currentTimeMillis) + HOST_WAIT_MS
  while (true) {
    if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => true)))) {
      return (yield* fs.exists(rejected).pipe(Effect.orElseSucceed(() => false)))
        ? { _tag: "Rejected", file: rejected, reason: "the store refused it (the serve's log says why)" } as Kept
        : { _tag: "Recorded" } as Kept
    }
    const delivered = yield* Effect.scoped(Effect.gen(function*() {
      const store = yield* StoreConfig.open(recording.store, { ...recording.options, brief: true })
      return yield* RunInbox.deliver(recording.inbox, {
        importRun: (record) => RunRecord.importInto(RunRecord.storeTarget(store), record),
        flush: store.flush(10_000)
      })
    })).pipe(Effect.either)
    if (Either.isRight(delivered)) {
      const { imported, kept, rejected: refused } = delivered.right
      if (imported.some((one) => one.file === file)) return { _tag: "Recorded" } as Kept
      const mine = refused.find((one) => one.file === file)
      if (mine !== undefined) return { _tag: "Rejected", file: rejected, reason: mine.reason } as Kept
      const waits = kept.find((one) => one.file === file)
      if (waits !== undefined) return { _tag: "Waiting", file, reason: waits.reason } as Kept
      continue // another run imported it meanwhile, with its own: the top of the loop sees it gone
    }
    const error = delivered.left
    if (error._tag !== "StoreLocked") return { _tag: "Waiting", file, reason: error.message } as Kept
    // The store's host imports it: wait for the file to go.
    if ((yield* Clock.currentTimeMillis) >= until) {
      return {
        _tag: "Waiting",
        file,
        reason: `the store is held by ${error.holder}, which did not take it in time`
      } as Kept
    }
    yield* Effect.sleep(RETRY)
  }
})

/** The line a shell run prints on stderr about its record. */
export const describeKept = (kept: Kept, name: string, recording: Recording, worktree: boolean): string => {
  const follow = `\`flotta runs ${name}\`${worktree ? `, \`flotta diff ${name}\`` : ""}`
  switch (kept._tag) {
    case "Recorded":
      return `flotta: recorded in the store ${recording.location}: ${follow}`
    case "Waiting":
      return `flotta: recorded in ${kept.file}, not in the store yet (${kept.reason}); a serve imports it as it ` +
        `starts, and ${follow} read it meanwhile`
    case "Rejected":
      return `flotta: not recorded in the store: ${kept.reason}; the record is kept in ${kept.file}`
    case "Lost":
      return `flotta: not recorded: ${kept.reason}`
  }
}
