/**
 * A store's inbox: a directory of run records (`RunRecord`) waiting to land in the store, one JSON file each, so that
 * a fleet that cannot write the store itself (a shell run beside the serve that holds it) loses nothing. `write`
 * puts a record there durably (a temporary name, synced, then renamed: a reader never sees half of one); `deliver`
 * imports what waits, deleting each file only once the store has committed it, and moving aside (`rejected/`) a
 * record the store refuses (`RunNameTaken`) or a file that is not one; a record of a newer format is left for a
 * newer flotta. `layer(dir)` is a host's inbox: what waits when it starts, then each file as it comes (the
 * directory watched, and polled as a fallback).
 */
import { FileSystem } from "@effect/platform"
import { Effect, Either, Layer, Option, ParseResult, Queue, Schema, Stream } from "effect"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import type { StoreUnavailable } from "./Errors.js"
import type { ImportOutcome, RunNameTaken } from "./RunRecord.js"
import { RECORD_VERSION, RunRecord, RunRecords } from "./RunRecord.js"
import { Store } from "./Store.js"

/** Where refused records and unreadable files are moved, inside the inbox: kept, never imported again. */
export const REJECTED = "rejected"

/** How often a host looks at its inbox when the directory's watch says nothing (it may miss events). */
export const POLL_INTERVAL = "2 seconds"

/** One file in the inbox, as a reader finds it. */
export type Waiting =
  | { readonly _tag: "Record"; readonly file: string; readonly record: RunRecord }
  | { readonly _tag: "Unreadable"; readonly file: string; readonly reason: string }
  | { readonly _tag: "Newer"; readonly file: string; readonly version: number }

/** What a delivery did with the inbox's files. */
export interface Delivered {
  /** Records that landed, by file. */
  readonly imported: ReadonlyArray<{ readonly file: string; readonly name: string }>
  /** Records moved to `rejected/`, and why. */
  readonly rejected: ReadonlyArray<{ readonly file: string; readonly name: string | null; readonly reason: string }>
  /** Records left where they are (not committed yet, or of a newer format), and why. */
  readonly kept: ReadonlyArray<{ readonly file: string; readonly reason: string }>
}

/** How a delivery lands records: an import, and the wait until what it wrote is committed. */
export interface Importer {
  readonly importRun: (record: RunRecord) => Effect.Effect<ImportOutcome, RunNameTaken | StoreUnavailable>
  readonly flush: Effect.Effect<boolean>
}

const Versioned = Schema.parseJson(Schema.Struct({ version: Schema.Number }))
const decodeVersion = Schema.decodeUnknownEither(Versioned)
const decodeRecord = Schema.decodeUnknownEither(Schema.parseJson(RunRecord))
const encodeRecord = Schema.encodeSync(RunRecord)

/** A record's file name: the run's name (a valid name is a valid file name) and a random tag, so none overwrites. */
const fileNameOf = (record: RunRecord) => `${record.name}.${randomBytes(4).toString("hex")}.json`

/** Writes `record` into the inbox `dir` (made if missing), durably; returns the file's path. */
export const write = Effect.fn("RunInbox.write")(function*(dir: string, record: RunRecord) {
  const fs = yield* FileSystem.FileSystem
  yield* fs.makeDirectory(dir, { recursive: true })
  const name = fileNameOf(record)
  const file = path.join(dir, name)
  const temporary = path.join(dir, `.${name}.tmp`)
  const bytes = new TextEncoder().encode(JSON.stringify(encodeRecord(record)))
  yield* Effect.scoped(Effect.gen(function*() {
    const handle = yield* fs.open(temporary, { flag: "wx" })
    yield* handle.writeAll(bytes)
    yield* handle.sync
  })).pipe(Effect.tapError(() => fs.remove(temporary).pipe(Effect.ignore)))
  yield* fs.rename(temporary, file)
  return file
})

/** The files waiting in `dir` (none when it does not exist), by name; temporary ones and `rejected/` left out. */
const files = (dir: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    fs.readDirectory(dir).pipe(
      Effect.map((names) => names.filter((n) => n.endsWith(".json") && !n.startsWith(".")).sort()),
      Effect.orElseSucceed((): ReadonlyArray<string> => [])
    ))

/** Reads one file of the inbox. */
const read = (file: string): Effect.Effect<Option.Option<Waiting>, never, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    fs.readFileString(file).pipe(
      Effect.map((text): Option.Option<Waiting> => {
        const version = decodeVersion(text)
        if (Either.isRight(version) && version.right.version > RECORD_VERSION) {
          return Option.some({ _tag: "Newer", file, version: version.right.version })
        }
        return Option.some(Either.match(decodeRecord(text), {
          onLeft: (error): Waiting => ({
            _tag: "Unreadable",
            file,
            reason: `not a run record: ${ParseResult.TreeFormatter.formatErrorSync(error)}`
          }),
          onRight: (record): Waiting => ({ _tag: "Record", file, record })
        }))
      }),
      // Gone meanwhile: another host took it.
      Effect.orElseSucceed(() => Option.none())
    ))

/** What waits in the inbox `dir`, oldest record first. */
export const waiting = Effect.fn("RunInbox.waiting")(function*(dir: string) {
  const found = (yield* Effect.forEach(yield* files(dir), (name) => read(path.join(dir, name)))).flatMap(
    Option.toArray
  )
  const finished = (w: Waiting) => (w._tag === "Record" ? w.record.run.finishedAt ?? "" : "")
  return found.sort((a, b) => finished(a).localeCompare(finished(b)))
})

/** The records waiting in `dir` (readable ones), oldest first. */
export const records = Effect.fnUntraced(function*(dir: string) {
  return yield* Effect.map(waiting(dir), (all) => all.flatMap((w) => (w._tag === "Record" ? [w.record] : [])))
})

/** Moves a file into `rejected/`, keeping it. */
const reject = (dir: string, file: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    fs.makeDirectory(path.join(dir, REJECTED), { recursive: true }).pipe(
      Effect.zipRight(fs.rename(file, path.join(dir, REJECTED, path.basename(file)))),
      Effect.ignore
    ))

/**
 * Imports every record waiting in `dir`, oldest first, with `importer`; a file goes once the store has committed
 * what its import wrote (or had it already). A refused record, or a file that is not one, is moved to `rejected/`.
 */
export const deliver = Effect.fn("RunInbox.deliver")(function*(dir: string, importer: Importer) {
  const fs = yield* FileSystem.FileSystem
  const imported: Array<Delivered["imported"][number]> = []
  const rejected: Array<Delivered["rejected"][number]> = []
  const kept: Array<Delivered["kept"][number]> = []
  const landed: Array<{ readonly file: string; readonly name: string }> = []
  for (const item of yield* waiting(dir)) {
    if (item._tag === "Newer") {
      kept.push({ file: item.file, reason: `a record of format ${item.version}, newer than this flotta reads` })
      continue
    }
    if (item._tag === "Unreadable") {
      yield* reject(dir, item.file)
      rejected.push({ file: item.file, name: null, reason: item.reason })
      continue
    }
    const outcome = yield* Effect.either(importer.importRun(item.record))
    if (Either.isLeft(outcome) && outcome.left._tag === "StoreUnavailable") {
      // Not the record's fault: it waits for the store to answer again.
      kept.push({ file: item.file, reason: outcome.left.message })
    } else if (Either.isLeft(outcome)) {
      yield* reject(dir, item.file)
      rejected.push({ file: item.file, name: item.record.name, reason: outcome.left.message })
    } else {
      landed.push({ file: item.file, name: item.record.name })
    }
  }
  if (landed.length > 0) {
    if (yield* importer.flush) {
      for (const one of landed) {
        yield* fs.remove(one.file).pipe(Effect.ignore)
        imported.push(one)
      }
    } else {
      for (const one of landed) kept.push({ file: one.file, reason: "the store has not committed it yet" })
    }
  }
  return { imported, rejected, kept } satisfies Delivered
})

/** Says what a delivery did, in the host's log. */
const logDelivered = (delivered: Delivered) =>
  Effect.gen(function*() {
    for (const one of delivered.imported) yield* Effect.logInfo(`run ${one.name} imported from the inbox`)
    for (const one of delivered.rejected) {
      yield* Effect.logWarning(`the inbox's ${one.file} was set aside in ${REJECTED}/: ${one.reason}`)
    }
  })

/**
 * A host's inbox `dir`: what waits there is imported into the engine's store as the layer starts, then each file
 * as it comes (the directory is watched; it is also polled every `POLL_INTERVAL`, as a watch can miss events).
 */
export const layer = (dir: string): Layer.Layer<never, never, RunRecords | Store | FileSystem.FileSystem> =>
  Layer.scopedDiscard(Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const records = yield* RunRecords
    const store = yield* Store
    const importer: Importer = { importRun: records.importRun, flush: store.flush() }
    const once = deliver(dir, importer).pipe(
      Effect.flatMap(logDelivered),
      Effect.catchAllCause((cause) => Effect.logWarning("the inbox could not be read", cause))
    )
    yield* fs.makeDirectory(dir, { recursive: true }).pipe(
      Effect.catchAll((error) => Effect.logWarning(`the inbox ${dir} cannot be made`, error))
    )
    yield* once
    const wake = yield* Queue.sliding<void>(1)
    yield* fs.watch(dir).pipe(
      Stream.runForEach(() => Queue.offer(wake, undefined)),
      Effect.catchAllCause((cause) => Effect.logDebug(`the inbox ${dir} is no longer watched; polled instead`, cause)),
      Effect.forkScoped
    )
    yield* Effect.raceFirst(Queue.take(wake), Effect.sleep(POLL_INTERVAL)).pipe(
      Effect.zipRight(once),
      Effect.forever,
      Effect.forkScoped
    )
  }))
