/**
 * How a shell run is recorded, with the in-memory Claude under TestClock and a real SQLite file (no process starts):
 * its record goes into the store's inbox however the run ends (Ctrl-C included), lands in a free store at once, waits
 * in the inbox while a host holds the store (readers see it there), and a name the store or its inbox holds is
 * refused before the run.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Flotta } from "@flotta/core/Flotta"
import * as RunInbox from "@flotta/core/RunInbox"
import * as RunOutcome from "@flotta/core/RunOutcome"
import * as StoreConfig from "@flotta/core/StoreConfig"
import { Effect, Either, Exit, Fiber, Layer, Option, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { eventually, memoryFleet } from "../../core/test/support.js"
import * as RunRecording from "../src/RunRecording.js"
import * as StoreAccess from "../src/StoreAccess.js"

const tempDir = () =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cli-recording-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

/** Where a project's shell runs are recorded: its SQLite file and the inbox beside it. */
const recordingIn = (dir: string): RunRecording.Recording => {
  const file = path.join(dir, ".flotta", "state.db")
  return { store: { sqlite: file }, options: {}, inbox: `${file}.inbox`, location: file }
}

const fleet = Layer.merge(memoryFleet(), NodeContext.layer)

/** A run as `flotta run` makes it, in a fleet of its own; its record written into the inbox. */
const shellRun = (recording: RunRecording.Recording, prompt: string, name: string) =>
  Effect.scoped(
    Effect.gen(function*() {
      const ran = yield* RunRecording.run(yield* Flotta, { prompt, name }, Option.some(recording))
      return { ...ran, file: Either.getOrThrow(ran.written) }
    }).pipe(Effect.provide(fleet))
  )

describe("a shell run's record", () => {
  it.scoped("goes into the inbox as the run ends, and lands in a free store at once", () =>
    Effect.gen(function*() {
      const recording = recordingIn(yield* tempDir())
      const ran = yield* shellRun(recording, "hello", "first")
      assert.isTrue(Exit.isSuccess(ran.exit))
      assert.isTrue(fs.existsSync(ran.file))
      assert.deepStrictEqual(yield* RunRecording.land(recording, ran.file), { _tag: "Recorded" })
      assert.isFalse(fs.existsSync(ran.file))
      const store = yield* StoreConfig.open(recording.store, { readOnly: true })
      assert.deepInclude(Option.getOrThrow(yield* store.run("first")), { name: "first", status: "succeeded" })
      assert.strictEqual(
        RunRecording.describeKept({ _tag: "Recorded" }, "first", recording, false),
        `flotta: recorded in the store ${recording.location}: \`flotta runs first\``
      )
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("waits in the inbox while a host holds the store, and readers see it there", () =>
    Effect.gen(function*() {
      const recording = recordingIn(yield* tempDir())
      const ran = yield* shellRun(recording, "error 500", "held")
      assert.isTrue(Exit.isFailure(ran.exit))
      yield* StoreConfig.open(recording.store) // the host, for the rest of the test
      const landing = yield* Effect.fork(RunRecording.land(recording, ran.file))
      yield* TestClock.adjust("6 seconds")
      const kept = yield* Fiber.join(landing)
      assert.strictEqual(kept._tag, "Waiting")
      assert.isTrue(kept._tag === "Waiting" && kept.reason.startsWith(`the store is held by pid ${process.pid}`))
      assert.isTrue(fs.existsSync(ran.file))
      assert.match(
        RunRecording.describeKept(kept, "held", recording, true),
        /^flotta: recorded in .*state\.db\.inbox\/held\.[0-9a-f]{8}\.json, not in the store yet \(the store is held/
      )
      const reader = yield* StoreAccess.openWithInbox(recording.store, recording.inbox)
      const failed = yield* Effect.flip(RunOutcome.storedOutcome(reader, "held"))
      assert.strictEqual(failed._tag, "TurnFailed")
      assert.deepStrictEqual((yield* StoreAccess.runs(reader, {})).map((r) => [r.name, r.state]), [["held", "failed"]])
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("is kept on Ctrl-C too: the run's turn is interrupted, and the run recorded as it ended", () =>
    Effect.gen(function*() {
      const recording = recordingIn(yield* tempDir())
      yield* Effect.scoped(
        Effect.gen(function*() {
          const f = yield* Flotta
          const running = yield* Effect.fork(
            RunRecording.run(f, { prompt: "hang", name: "stopped" }, Option.some(recording))
          )
          yield* eventually(f.list(), (agents) => agents.some((a) => a.name === "stopped" && a.status === "working"))
          yield* Fiber.interrupt(running)
        }).pipe(Effect.provide(fleet))
      )
      assert.deepStrictEqual(yield* RunInbox.records(recording.inbox), [], "landed in the store at once")
      const store = yield* StoreConfig.open(recording.store, { readOnly: true })
      const row = Option.getOrThrow(yield* store.run("stopped"))
      assert.strictEqual(row.status, "failed")
      assert.strictEqual((row.error as { _tag: string })._tag, "TurnInterrupted")
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("a name the store or its inbox holds is refused before the run", () =>
    Effect.gen(function*() {
      const recording = recordingIn(yield* tempDir())
      const landed = yield* shellRun(recording, "hello", "taken")
      yield* RunRecording.land(recording, landed.file)
      yield* shellRun(recording, "hello", "queued") // its record stays in the inbox
      const inStore = yield* Effect.flip(RunRecording.checkName(recording, "taken"))
      assert.match(inStore.message, /^the run "taken" cannot be recorded: the store has a run of that name already/)
      const inInbox = yield* Effect.flip(RunRecording.checkName(recording, "queued"))
      assert.include(inInbox.message, `a run of that name waits in ${recording.inbox}`)
      yield* RunRecording.checkName(recording, "free")
    }).pipe(Effect.provide(NodeContext.layer)))
})
