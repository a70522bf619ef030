/**
 * Where each command keeps state, and the store read straight from its file (read-only, beside a holder):
 * what `doctor` shows of it and the transcript `flotta transcript --store` prints. No process starts.
 */
import { assert, describe, it } from "@effect/vitest"
import type { StoreShape, TurnRow } from "@flotta/core/Store"
import * as StoreConfig from "@flotta/core/StoreConfig"
import * as Notifier from "@flotta/webhooks/Notifier"
import { targetOf } from "@flotta/webhooks/WebhooksConfig"
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Composition from "../src/Composition.js"
import * as ConfigFile from "../src/ConfigFile.js"
import * as DoctorCommand from "../src/DoctorCommand.js"
import * as InitCommand from "../src/InitCommand.js"
import * as StoreAccess from "../src/StoreAccess.js"
import * as StoreTarget from "../src/StoreTarget.js"
// The same rows the core store suite writes.
import { agentRow } from "../../core/test/storeSuite.js"

/** The SQLite driver this Node uses, as doctor names it. */
const DRIVER = process.getBuiltinModule?.("node:sqlite") !== undefined ? "node:sqlite" : "better-sqlite3 12\\.[\\d.]+"

const tempDir = () =>
  Effect.acquireRelease(
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cli-store-"))),
    (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
  )

const turnRow = (agent: string, n: number): TurnRow => ({
  agent,
  n,
  timeoutMs: 1000,
  record: {
    turnId: `t${n}`,
    prompt: `prompt ${n}`,
    status: "succeeded",
    reply: `reply ${n}`,
    error: null,
    toolCalls: [{ id: "tu1", name: "Read", input: { file_path: "a.md" } }],
    permissions: [{ tool: "Read", input: { file_path: "a.md" }, decision: "allow" }],
    costUsd: 0.01,
    durationMs: 5,
    modelCalls: 1,
    enqueuedAt: new Date(0).toISOString(),
    startedAt: new Date(0).toISOString(),
    finishedAt: new Date(5).toISOString()
  }
})

/** Writes an agent with three turns into a fresh store, and closes it (as a stopped serve would leave it). */
const written = (file: string) =>
  Effect.scoped(Effect.gen(function*() {
    const store: StoreShape = yield* StoreConfig.open({ sqlite: file })
    store.saveAgent(agentRow("scout"))
    for (const n of [1, 2, 3]) store.saveTurn(turnRow("scout", n))
    store.appendReport({ at: new Date(0).toISOString(), agent: "scout", kind: "spawned", data: {}, turnId: undefined })
    assert.isTrue(yield* store.flush())
  }))

/** A store file (state.db in a fresh directory) as `written` leaves it. */
const writtenStore = Effect.gen(function*() {
  const dir = yield* tempDir()
  const file = path.join(dir, "state.db")
  yield* written(file)
  return { dir, file }
})

describe("where each command keeps state", () => {
  const config = Either.getOrThrow(ConfigFile.decode("/p/flotta.config.json", {}))
  const withStore = Either.getOrThrow(
    ConfigFile.decode("/p/flotta.config.json", { store: { sqlite: "data/fleet.db", retainDays: 3 } })
  )

  it("serve and repl: the config's store, else .flotta/state.db in the project; run and mcp: memory", () => {
    assert.deepStrictEqual(StoreTarget.storeFor(config, true), { sqlite: "/p/.flotta/state.db" })
    assert.deepStrictEqual(StoreTarget.storeFor(withStore, true), { sqlite: "/p/data/fleet.db" })
    assert.strictEqual(StoreTarget.storeFor(config, false), "memory")
    assert.strictEqual(StoreTarget.storeFor(withStore, false), "memory")
    assert.deepStrictEqual(Composition.fleetOptions(withStore, {}, true).storeOptions, { retainDays: 3 })
    assert.strictEqual(Composition.fleetOptions(withStore, {}).store, "memory")
  })

  it("a simulated fleet keeps the CLI's sessions beside an SQLite store, so that they can resume", () => {
    assert.strictEqual(Composition.simulationRoot({ sqlite: "/p/.flotta/state.db" }), "/p/.flotta/state.db.simulate")
    assert.isUndefined(Composition.simulationRoot("memory"))
    assert.isUndefined(Composition.simulationRoot({ postgres: "postgres://db/x" }))
  })
})

describe("the store, read-only", () => {
  it.scoped("doctor: not created yet, memory, or kind, place, size, schema version and health", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const file = path.join(dir, ".flotta", "state.db")
      const lines: Array<string> = []
      const say = {
        ok: (text: string) => Effect.sync(() => void lines.push(`ok ${text}`)),
        warn: (text: string) => Effect.sync(() => void lines.push(`warn ${text}`))
      }
      yield* DoctorCommand.storeLine(yield* StoreAccess.inspect({ sqlite: file }), say)
      assert.isFalse(fs.existsSync(file), "inspecting a missing store does not make it")
      yield* DoctorCommand.storeLine(yield* StoreAccess.inspect("memory"), say)
      yield* written(file)
      yield* DoctorCommand.storeLine(yield* StoreAccess.inspect({ sqlite: file }), say)
      assert.match(
        lines[0]!,
        new RegExp(
          `^ok store: sqlite ${file}: not created yet \\(the first \`flotta serve\` or \`flotta run\` makes it, on ${DRIVER}\\)$`
        )
      )
      assert.strictEqual(lines[1], "ok store: memory (serve and repl keep no state across restarts)")
      assert.match(
        lines[2]!,
        new RegExp(`^ok store: sqlite ${file} \\(schema v3, [\\d.]+ kB, ${DRIVER}\\), ok$`)
      )
    }))

  it.scoped("reads beside a holder (no lock), and refuses a file that is not a store, naming it", () =>
    Effect.gen(function*() {
      const { dir, file } = yield* writtenStore
      const holder = yield* StoreConfig.open({ sqlite: file })
      const inspected = yield* StoreAccess.inspect({ sqlite: file })
      assert.strictEqual(inspected._tag, "Found")
      const reader = yield* StoreAccess.openReadOnly({ sqlite: file })
      assert.strictEqual((yield* reader.readReports({})).entries.length, 1)
      assert.strictEqual((yield* holder.info).kind, "sqlite")

      const corrupt = path.join(dir, "corrupt.db")
      fs.writeFileSync(corrupt, "this is not a database, not at all")
      const refused = yield* Effect.flip(StoreAccess.inspect({ sqlite: corrupt }))
      assert.strictEqual(refused._tag, "StoreUnavailable")
      assert.include(refused.message, corrupt)
    }))

  it.scoped("a transcript: the records oldest first, the last N; an unknown name says what the store holds", () =>
    Effect.gen(function*() {
      const { file } = yield* writtenStore
      const store = yield* StoreAccess.openReadOnly({ sqlite: file })
      const all = yield* StoreAccess.transcript(store, "scout")
      assert.strictEqual(all.total, 3)
      assert.deepStrictEqual(all.turns.map((t) => t.turnId), ["t1", "t2", "t3"])
      assert.deepStrictEqual(all.turns[0]!.toolCalls.map((c) => c.name), ["Read"])
      assert.deepStrictEqual(all.turns[0]!.permissions.map((p) => p.decision), ["allow"])
      const last = yield* StoreAccess.transcript(store, "scout", 2)
      assert.deepStrictEqual([last.total, last.turns.map((t) => t.turnId)], [3, ["t2", "t3"]])
      assert.notProperty(all, "closed")
      const missing = yield* Effect.flip(StoreAccess.transcript(store, "ghost"))
      assert.strictEqual(missing._tag, "NotInStore")
      assert.strictEqual(missing.message, `no agent named "ghost" in the store ${file} (it holds: scout)`)
    }))

  it.scoped("a closed agent's transcript says why and when it closed, and has only its own turns", () =>
    Effect.gen(function*() {
      const { file } = yield* writtenStore
      // The name used again after scout t1-t3 closed: the later agent numbers on from t3, and closes too.
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open({ sqlite: file })
        store.saveAgent(
          agentRow("scout", {
            status: "closed",
            closedReason: "done",
            closedAt: "2026-01-02T03:04:05.000Z",
            turnsBefore: 3
          })
        )
        store.saveTurn(turnRow("scout", 4))
        assert.isTrue(yield* store.flush())
      }))
      const store = yield* StoreAccess.openReadOnly({ sqlite: file })
      const closed = yield* StoreAccess.transcript(store, "scout")
      assert.deepStrictEqual(closed.turns.map((t) => t.turnId), ["t4"])
      assert.deepStrictEqual(closed.closed, { reason: "done", at: "2026-01-02T03:04:05.000Z" })
    }))
})

describe("flotta init and .gitignore", () => {
  it("adds the store's files to an existing .gitignore, once", () => {
    assert.strictEqual(
      InitCommand.withStoreIgnored("node_modules"),
      "node_modules\n# flotta's state (flotta serve, flotta repl)\n.flotta/state.db*\n"
    )
    assert.isTrue(InitCommand.ignoresStore(InitCommand.withStoreIgnored("node_modules\n")))
    assert.isTrue(InitCommand.ignoresStore("dist\n/.flotta/\n"))
    assert.isFalse(InitCommand.ignoresStore("dist\n.flotta/config.json\n"))
  })

  it("the starter config names the default store", () => {
    const decoded = ConfigFile.decode(
      "/p/flotta.config.json",
      JSON.parse(ConfigFile.stripComments(InitCommand.STARTER))
    )
    assert.deepStrictEqual(Either.getOrThrow(decoded).store, { config: { sqlite: "/p/.flotta/state.db" } })
  })
})

describe("doctor: the notifications and the triggers", () => {
  const collect = () => {
    const lines: Array<string> = []
    const say = {
      ok: (text: string) => Effect.sync(() => void lines.push(`ok ${text}`)),
      warn: (text: string) => Effect.sync(() => void lines.push(`warn ${text}`))
    }
    return { lines, say }
  }
  const SECRET = "0123456789abcdef-secret"

  it.scoped("each target with its delivery state, read from the store; the triggers and the routines' secrets", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir()
      const file = path.join(dir, "state.db")
      const notify = [
        { url: "https://hooks.example.com/services/T0/B0/secret-path", events: ["approval_requested", "run_finished"] },
        { url: "https://ci.example.com/flotta/events", events: ["*"], secret: SECRET, format: "json" },
        { url: "https://chat.example.com/hook/abc", events: ["agent_crashed"], format: "slack" }
      ]
      const config = Either.getOrThrow(ConfigFile.decode(path.join(dir, "flotta.config.json"), {
        agents: [{ name: "scout" }, { name: "issue-runner", lifecycle: "run", worktree: true }],
        store: { sqlite: file },
        mcp: {},
        notify,
        github: {
          secret: SECRET,
          on: [
            { event: "issues.labeled", label: "flotta", run: "issue-runner" },
            { event: "check_run.completed", conclusion: "failure", routine: "fix-ci" }
          ]
        },
        schedule: { timezone: "utc", hours: { mon: ["09:00-17:00"] } },
        routines: [
          { name: "fix-ci", action: "prompt", agent: "scout", prompt: "Fix CI.", secret: SECRET },
          { name: "nightly", action: "scan", every: { dailyAt: "02:00" } }
        ]
      }))

      // Before the first serve: no store yet, nothing sent.
      const before = collect()
      yield* DoctorCommand.webhookLines(config, before.say)
      assert.deepStrictEqual(before.lines, [
        "ok notify: https://hooks.example.com/… (json) for approval_requested, run_finished: nothing sent yet",
        "ok notify: https://ci.example.com/… (json, signed) for *: nothing sent yet",
        "ok notify: https://chat.example.com/… (slack) for agent_crashed: nothing sent yet",
        "ok triggers: github on (2 mappings); routines with a secret: fix-ci"
      ])

      // What a serve's notifier left in the store.
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open({ sqlite: file })
        const [first, second] = config.notify!.map((target) => targetOf(target))
        store.saveState(Notifier.stateKey(first!), {
          cursor: 12,
          delivered: 4,
          lastDelivered: { seq: 12, at: "2025-06-01T09:00:00.000Z" },
          failing: null,
          deadCount: 0,
          dead: []
        })
        store.saveState(Notifier.stateKey(second!), {
          cursor: 20,
          delivered: 7,
          lastDelivered: { seq: 19, at: "2025-06-01T10:00:00.000Z" },
          failing: { since: "2025-06-01T10:05:00.000Z", attempts: 3, reason: "it answered 503", seq: 21 },
          deadCount: 1,
          dead: [{
            seq: 20,
            kind: "run_finished",
            agent: "errand",
            at: "2025-05-31T10:00:00.000Z",
            deadAt: "2025-06-01T10:00:00.000Z",
            deliveryId: `${second!.id}-20`,
            reason: "it answered 503"
          }]
        })
        assert.isTrue(yield* store.flush())
      }))
      const after = collect()
      yield* DoctorCommand.webhookLines(config, after.say)
      assert.deepStrictEqual(after.lines.slice(0, 3), [
        "ok notify: https://hooks.example.com/… (json) for approval_requested, run_finished: 4 delivered, the last at " +
        "2025-06-01T09:00:00.000Z",
        "warn notify: https://ci.example.com/… (json, signed) for *: 7 delivered, the last at 2025-06-01T10:00:00.000Z; " +
        "failing since 2025-06-01T10:05:00.000Z (3 attempts, entry 21): it answered 503; 1 dead letter (the newest: " +
        "run_finished of errand, it answered 503)",
        "ok notify: https://chat.example.com/… (slack) for agent_crashed: nothing sent yet"
      ])
      assert.notInclude(after.lines.join("\n"), "secret-path", "a webhook URL's path is never shown")
    }))

  it.effect("no notify, github or routines: nothing to say; routines alone: github off", () =>
    Effect.gen(function*() {
      const none = collect()
      yield* DoctorCommand.webhookLines(Either.getOrThrow(ConfigFile.decode("/p/f.json", {})), none.say)
      assert.deepStrictEqual(none.lines, [])
      const routines = collect()
      yield* DoctorCommand.webhookLines(
        Either.getOrThrow(ConfigFile.decode("/p/f.json", {
          agents: [{ name: "scout" }],
          schedule: { timezone: "utc", hours: {} },
          routines: [{ name: "fix-ci", action: "prompt", agent: "scout", prompt: "Fix.", secret: SECRET }]
        })),
        routines.say
      )
      assert.deepStrictEqual(routines.lines, [
        "warn triggers: github off; routines with a secret: fix-ci (no mcp or dashboard section: no server takes " +
        "the hooks)"
      ])
    }))
})
