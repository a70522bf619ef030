/**
 * A run's record, over the in-memory Claude and in-memory repositories, under TestClock: exported from the fleet
 * that ran it (its row, closed agent, turns, diff and report entries), imported into another fleet's store, where
 * runs(), runResult, diff, costs and the report log then show it as if it had run there; importing twice changes
 * nothing; a name the store holds already is RunNameTaken, nothing overwritten. The inbox: a record written there
 * lands when delivered (the file goes once committed), a refused one or a file that is not one is set aside, one of
 * a newer format is left alone, and a host's inbox layer imports what waits when it starts and what comes later.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Option, Stream, TestClock } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Flotta } from "../src/Flotta.js"
import { ReportLog } from "../src/ReportLog.js"
import { stateKey } from "../src/RunDiff.js"
import * as RunInbox from "../src/RunInbox.js"
import * as RunRecord from "../src/RunRecord.js"
import { RunRecords } from "../src/RunRecord.js"
import * as SqliteStore from "../src/SqliteStore.js"
import { Store } from "../src/Store.js"
import * as Testing from "../src/Testing.js"
import { eventually, failureOf, memoryFleet, tempDir } from "./support.js"

const REPO = "/repo"
const git = Testing.git({
  changes: ({ name }) => [{ path: "README.md", before: "# old\n", after: `# new\n${name}\n` }]
})

/** One fleet of its own, built in the test's scope (a test may hold two: the one that ran, the one it lands in). */
const fleetIn = (options: Testing.Options = {}) =>
  Effect.map(Layer.build(memoryFleet({ git, ...options })), (context) => ({
    fleet: Context.get(context, Flotta),
    records: Context.get(context, RunRecords),
    store: Context.get(context, Store),
    log: Context.get(context, ReportLog)
  }))

/** A worktree run, as a shell `flotta run` makes it: async, awaited, then exported. */
const ranElsewhere = (prompt: string, name: string) =>
  Effect.scoped(Effect.gen(function*() {
    const shell = yield* fleetIn()
    yield* Effect.exit(shell.fleet.awaitRun(yield* shell.fleet.runAsync({ prompt, name, cwd: REPO, worktree: true })))
    return yield* shell.records.exportRun(name)
  }))

describe("run records", () => {
  it.scoped("a finished run's record lands in another fleet: runs, runResult, diff, costs and the log show it", () =>
    Effect.gen(function*() {
      const record = yield* ranElsewhere("hello", "typo-fix")
      assert.strictEqual(record.version, RunRecord.RECORD_VERSION)
      assert.deepInclude(record.run, { name: "typo-fix", kind: "run", status: "succeeded" })
      assert.deepStrictEqual(record.agents.map((a) => [a.name, a.lifecycle, a.status, a.process]), [
        ["typo-fix", "run", "closed", null]
      ])
      assert.deepStrictEqual(record.turns.map((t) => [t.agent, t.n, t.record.status, t.run]), [
        ["typo-fix", 1, "succeeded", "typo-fix"]
      ])
      assert.deepStrictEqual(record.diffs.map((d) => [d.name, d.added, d.removed, d.running]), [
        ["typo-fix", 2, 1, false]
      ])
      const kinds = record.reports.map((r) => r.kind)
      assert.includeMembers(kinds, ["spawned", "result", "closed", "run_finished"])
      assert.isTrue(record.reports.every((r) => !("seq" in r)), "entries travel without their seqs")

      const serve = yield* fleetIn()
      yield* serve.fleet.spawn("scout") // the host's log has entries of its own: the record's are numbered after them
      const before = (yield* serve.fleet.reports({})).next
      const live = yield* serve.log.subscribe({ agent: "typo-fix" })
      const outcome = yield* serve.records.importRun(record)
      assert.deepStrictEqual(outcome, { _tag: "Imported", name: "typo-fix", entries: record.reports.length })

      const [listed] = yield* serve.fleet.runs()
      assert.deepInclude(listed!, { name: "typo-fix", state: "succeeded", branch: "worktree-typo-fix" })
      assert.strictEqual(listed!.costUsd, record.turns[0]!.record.costUsd)
      const result = yield* serve.fleet.runResult("typo-fix")
      assert.isTrue(result.kind === "run" && result.text === "echo: hello")
      assert.deepStrictEqual(yield* serve.fleet.diff("typo-fix"), record.diffs[0])
      const byRun = yield* serve.fleet.costs({ by: "run" })
      assert.deepStrictEqual(byRun.groups.map((g) => [g.key, g.turns]), [["typo-fix", 1]])

      const page = yield* serve.fleet.reports({ since: before, agent: "typo-fix" })
      assert.deepStrictEqual(page.entries.map((e) => e.kind), kinds)
      assert.deepStrictEqual(page.entries.map((e) => e.seq), kinds.map((_, i) => before + i + 1))
      assert.deepStrictEqual(page.entries.map((e) => e.at), record.reports.map((r) => r.at), "each at its own time")
      const told = yield* live.pipe(Stream.take(kinds.length), Stream.runCollect)
      assert.strictEqual(told.length, kinds.length, "live subscribers are told")
    }))

  it.scoped("importing the same record twice changes nothing; a name the store holds is RunNameTaken", () =>
    Effect.gen(function*() {
      const record = yield* ranElsewhere("hello", "twice")
      const serve = yield* fleetIn()
      assert.strictEqual((yield* serve.records.importRun(record))._tag, "Imported")
      const next = (yield* serve.fleet.reports({})).next
      assert.deepStrictEqual(yield* serve.records.importRun(record), { _tag: "AlreadyImported", name: "twice" })
      assert.strictEqual((yield* serve.fleet.reports({})).next, next, "no entry twice")

      // Another run of the same name: refused, and the first stays as it was.
      const other = yield* ranElsewhere("error 500", "twice")
      const taken = failureOf(yield* Effect.exit(serve.records.importRun(other)))
      assert.strictEqual(taken._tag, "RunNameTaken")
      assert.match(taken.message, /^the run "twice" cannot be recorded: the store has a run of that name already/)
      assert.strictEqual((yield* serve.fleet.runs())[0]!.state, "succeeded")

      // A session of that name, live or only in the store.
      yield* serve.fleet.spawn("scout")
      const scout = yield* ranElsewhere("hello", "scout")
      const live = failureOf(yield* Effect.exit(serve.records.importRun(scout)))
      assert.include(live.message, `an agent named "scout" is live in the fleet`)
      yield* serve.fleet.close("scout")
      const stored = failureOf(yield* Effect.exit(serve.records.importRun(scout)))
      assert.include(stored.message, `the store has an agent named "scout" already`)
    }))

  it.scoped("a failed run's record keeps its typed error; an unknown or unfinished run has no record", () =>
    Effect.gen(function*() {
      const record = yield* ranElsewhere("error 500", "broke")
      assert.strictEqual(record.run.status, "failed")
      assert.deepInclude(record.reports.find((r) => r.kind === "run_finished")!.data as object, { ok: false })
      const serve = yield* fleetIn()
      yield* serve.records.importRun(record)
      const error = failureOf(yield* Effect.exit(serve.fleet.runResult("broke")))
      assert.strictEqual(error._tag, "TurnFailed")
      assert.strictEqual((yield* serve.fleet.runs())[0]!.error, "TurnFailed")
      assert.strictEqual((yield* serve.fleet.diff("broke")).files[0]!.path, "README.md")

      assert.strictEqual(failureOf(yield* Effect.exit(serve.records.exportRun("ghost")))._tag, "RunNotFound")
      const going = yield* serve.fleet.runAsync({ prompt: "slow 5000 work", name: "going" })
      assert.strictEqual(failureOf(yield* Effect.exit(serve.records.exportRun(going)))._tag, "TurnPending")
      yield* TestClock.adjust("5 seconds")
      yield* serve.fleet.awaitRun(going)
      assert.strictEqual((yield* serve.records.exportRun(going)).run.status, "succeeded")
    }))

  it.scoped("laid over a store, a record not imported yet reads as the store's own; the store's rows win", () =>
    Effect.gen(function*() {
      const record = yield* ranElsewhere("hello", "waiting")
      const serve = yield* fleetIn()
      yield* serve.fleet.awaitRun(yield* serve.fleet.runAsync({ prompt: "hello", name: "stored" }))
      // A record of a run the store has already (imported meanwhile): the store's row is the one read.
      const stale = { ...record, run: { ...Option.getOrThrow(yield* serve.store.run("stored")), finishedAt: "x" } }
      const seen = RunRecord.overlay(serve.store, [record, {
        ...stale,
        name: "stored",
        agents: [],
        turns: [],
        diffs: []
      }])
      assert.deepStrictEqual((yield* seen.runs).map((r) => r.name).sort(), ["stored", "waiting"])
      assert.deepStrictEqual(yield* seen.run("stored"), yield* serve.store.run("stored"))
      assert.notStrictEqual(Option.getOrThrow(yield* seen.run("stored")).finishedAt, "x")
      assert.deepStrictEqual(Option.getOrThrow(yield* seen.run("waiting")), record.run)
      assert.isTrue((yield* seen.agents).some((a) => a.name === "waiting"))
      assert.deepStrictEqual(yield* seen.turns("waiting"), record.turns)
      assert.deepStrictEqual(Option.getOrThrow(yield* seen.loadState(stateKey("waiting"))), record.diffs[0])
      assert.strictEqual(RunRecord.overlay(serve.store, []), serve.store)
    }))

  it.scoped("a best-of-N run's record carries every attempt: agents, turns and diffs", () =>
    Effect.gen(function*() {
      const record = yield* Effect.scoped(Effect.gen(function*() {
        const shell = yield* fleetIn({
          git: Testing.git({
            changes: ({ name }) => [{ path: `${name}.txt`, after: "x\n" }],
            check: ({ env }) => (env["FLOTTA_ATTEMPT"] === "2" ? 0 : 1)
          })
        })
        const name = yield* shell.fleet.runAsync({
          prompt: "hello",
          name: "best",
          cwd: REPO,
          worktree: true,
          attempts: 2,
          pick: "cheapest",
          verify: { checks: ["npm test"] }
        })
        yield* shell.fleet.awaitRun(name)
        return yield* shell.records.exportRun(name)
      }))
      assert.deepStrictEqual(record.agents.map((a) => a.name).sort(), ["best-a1", "best-a2"])
      assert.deepStrictEqual(record.diffs.map((d) => d.name).sort(), ["best", "best-a1", "best-a2"])
      const serve = yield* fleetIn()
      yield* serve.records.importRun(record)
      assert.deepStrictEqual((yield* serve.fleet.diff("best")).files.map((f) => f.path), ["best-a2.txt"])
      const byRun = yield* serve.fleet.costs({ by: "agent" })
      assert.deepStrictEqual(byRun.groups.map((g) => g.key).sort(), ["best-a1", "best-a2"])
    }))
})

describe("the inbox", () => {
  const withPlatform = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, NodeContext.layer)

  it.scoped("delivers what waits: a record lands and its file goes; a refused one and garbage are set aside", () =>
    withPlatform(Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "inbox")
      const first = yield* ranElsewhere("hello", "one")
      const file = yield* RunInbox.write(dir, first)
      assert.match(path.basename(file), /^one\.[0-9a-f]{8}\.json$/)
      assert.deepStrictEqual(fs.readdirSync(dir), [path.basename(file)], "no temporary file is left")
      assert.deepStrictEqual((yield* RunInbox.records(dir)).map((r) => r.name), ["one"])

      const serve = yield* fleetIn()
      const importer = { importRun: serve.records.importRun, flush: serve.store.flush() }
      yield* serve.fleet.spawn("two") // a live session: the record of a run "two" is refused
      yield* RunInbox.write(dir, yield* ranElsewhere("hello", "two"))
      fs.writeFileSync(path.join(dir, "junk.json"), "{ not json")
      fs.writeFileSync(path.join(dir, "future.json"), JSON.stringify({ version: 99, name: "future" }))
      const delivered = yield* RunInbox.deliver(dir, importer)
      assert.deepStrictEqual(delivered.imported, [{ file, name: "one" }])
      assert.deepStrictEqual(
        delivered.rejected.map((r) => [path.basename(r.file), r.name]).sort(),
        [
          ["junk.json", null],
          [path.basename(delivered.rejected.find((r) => r.name === "two")!.file), "two"]
        ].sort()
      )
      assert.match(delivered.rejected.find((r) => r.name === null)!.reason, /^not a run record/)
      assert.deepStrictEqual(delivered.kept.map((k) => path.basename(k.file)), ["future.json"])
      assert.deepStrictEqual(fs.readdirSync(dir).sort(), ["future.json", RunInbox.REJECTED])
      assert.strictEqual(fs.readdirSync(path.join(dir, RunInbox.REJECTED)).length, 2)
      assert.strictEqual((yield* serve.fleet.runs())[0]!.name, "one")
    })))

  it.scoped("a file stays until the store has committed its record, and then goes on the next delivery", () =>
    withPlatform(Effect.gen(function*() {
      const dir = path.join(yield* tempDir, "inbox")
      const file = yield* RunInbox.write(dir, yield* ranElsewhere("hello", "slow-disk"))
      const serve = yield* fleetIn()
      const refusing = { importRun: serve.records.importRun, flush: Effect.succeed(false) }
      const first = yield* RunInbox.deliver(dir, refusing)
      assert.deepStrictEqual(first.kept, [{ file, reason: "the store has not committed it yet" }])
      assert.isTrue(fs.existsSync(file))
      const second = yield* RunInbox.deliver(dir, { ...refusing, flush: serve.store.flush() })
      assert.deepStrictEqual(second.imported, [{ file, name: "slow-disk" }])
      assert.isFalse(fs.existsSync(file))
      assert.strictEqual(
        (yield* serve.fleet.reports({ agent: "slow-disk", kinds: ["run_finished"] })).entries.length,
        1
      )
    })))

  it.scoped("a host's inbox imports what waits when it starts, then what comes later, into a durable store", () =>
    withPlatform(Effect.gen(function*() {
      const root = yield* tempDir
      const dir = path.join(root, "state.db.inbox")
      yield* RunInbox.write(dir, yield* ranElsewhere("hello", "early"))
      const late = yield* ranElsewhere("hello", "late")
      const serve = yield* fleetIn({ store: SqliteStore.layer(path.join(root, "state.db")) })
      yield* Layer.build(
        RunInbox.layer(dir).pipe(
          Layer.provide(Layer.succeed(RunRecords, serve.records)),
          Layer.provide(Layer.succeed(Store, serve.store)),
          Layer.provide(NodeContext.layer)
        )
      )
      assert.deepStrictEqual((yield* serve.fleet.runs()).map((r) => r.name), ["early"])
      assert.deepStrictEqual(fs.readdirSync(dir), [])
      yield* RunInbox.write(dir, late)
      yield* TestClock.adjust(RunInbox.POLL_INTERVAL)
      const runs = yield* eventually(serve.fleet.runs(), (r) => r.length === 2)
      assert.deepStrictEqual(runs.map((r) => r.name).sort(), ["early", "late"])
      yield* eventually(Effect.sync(() => fs.readdirSync(dir)), (files) => files.length === 0)
    })))
})
