/**
 * Sessions that live for weeks, with the real claude CLI offline against the simulator (which counts each
 * request's input tokens from its size, as a real API's grow with the conversation): how full the context is after
 * each turn, `compact` (the CLI's `/compact`) reported as `compacted` with its token counts and marked in the
 * transcript, the context smaller after it while the facts survive in the summary, `clear` (a new conversation
 * under the same name, its facts gone, the transcript going on), and a session file the CLI cannot write (a full
 * disk: here the file is /dev/full), which it says as it exits and the agent shows.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Flotta from "../packages/core/src/Flotta.js"
import { CLAUDE, useOfflineApi } from "./support/realCli.js"

const offline = useOfflineApi("flotta-compact", { measure: true })

const realFleet = () => Flotta.layer({ claudePath: CLAUDE, env: offline.env }).pipe(Layer.provide(NodeContext.layer))

/** Words that take their room in the context. */
const padding = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(" ")

describe("context and compaction with the real claude CLI", () => {
  it.scopedLive(
    "compact: a compacted entry with its token counts, the context smaller, the fact kept",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        yield* fleet.spawn("weeks", { cwd: offline.workdir("compact") })
        yield* fleet.ask("weeks", `ECHO ${padding(1500)}`)
        yield* fleet.ask("weeks", "REMEMBER the code is 4217")
        yield* fleet.ask("weeks", `ECHO ${padding(1500)}`)
        const before = (yield* fleet.info("weeks")).context!
        assert.strictEqual(before.window, 1_000_000, "the CLI's window for its default model")
        assert.isAbove(before.tokens, 4000)
        const turnId = yield* fleet.compact("weeks", "keep the code")
        const result = yield* fleet.wait("weeks", turnId)
        const compaction = result.compaction!
        assert.strictEqual(compaction.trigger, "manual")
        assert.strictEqual(compaction.preTokens, before.tokens)
        assert.isBelow(compaction.postTokens!, compaction.preTokens)
        const [entry] = (yield* fleet.reports({ agent: "weeks", kinds: ["compacted"] })).entries
        assert.deepStrictEqual(entry!.data, compaction)
        assert.deepStrictEqual((yield* fleet.transcript("weeks")).at(-1)!.marks, [{ _tag: "Compacted", compaction }])
        assert.isBelow((yield* fleet.info("weeks")).context!.tokens, before.tokens, "context use drops")
        assert.strictEqual(yield* fleet.ask("weeks", "RECALL"), "The fact is: the code is 4217", "the summary kept it")
        assert.isBelow((yield* fleet.info("weeks")).context!.tokens, before.tokens)
      }).pipe(Effect.provide(realFleet())),
    { timeout: 240_000 }
  )

  it.scopedLive(
    "clear: a new session under the same name, with nothing of the old conversation",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const first = yield* fleet.spawn("again", { cwd: offline.workdir("clear") })
        yield* fleet.ask("again", "REMEMBER PELICAN")
        const turnId = yield* fleet.clear("again")
        const cleared = yield* fleet.wait("again", turnId)
        assert.notStrictEqual(cleared.sessionId, first.sessionId)
        assert.strictEqual((yield* fleet.info("again")).sessionId, cleared.sessionId)
        assert.strictEqual(yield* fleet.ask("again", "RECALL"), "I know no fact.")
        const turns = yield* fleet.transcript("again")
        assert.deepStrictEqual(turns.map((t) => t.turnId), ["t1", "t2", "t3"])
        assert.deepStrictEqual(turns[1]!.marks, [
          { _tag: "Cleared", previousSessionId: first.sessionId, sessionId: cleared.sessionId }
        ])
      }).pipe(Effect.provide(realFleet())),
    { timeout: 240_000 }
  )

  it.scopedLive(
    "a session file on a full disk: session_writes_lost is reported, and the agent shows it",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const cwd = offline.workdir("full-disk")
        const info = yield* fleet.spawn("unlucky", { cwd })
        // The CLI writes the session's file with its first turn: every write to /dev/full fails with ENOSPC.
        const dir = path.join(offline.env["CLAUDE_CONFIG_DIR"]!, "projects", cwd.replace(/[^A-Za-z0-9]/g, "-"))
        fs.mkdirSync(dir, { recursive: true })
        fs.symlinkSync("/dev/full", path.join(dir, `${info.sessionId}.jsonl`))
        assert.strictEqual(yield* fleet.ask("unlucky", "REMEMBER PELICAN"), "OK, I will remember that.")
        yield* fleet.hibernate("unlucky")
        const lost = (yield* fleet.info("unlucky")).sessionWritesLost!
        assert.deepInclude(lost, { errorCode: "ENOSPC", lost: ["transcript"], sessionIds: [info.sessionId] })
        const [entry] = (yield* fleet.reports({ agent: "unlucky", kinds: ["session_writes_lost"] })).entries
        assert.deepStrictEqual(entry!.data, lost)
      }).pipe(Effect.provide(realFleet())),
    { timeout: 240_000 }
  )
})
