/**
 * Forking with the real claude CLI, offline against the simulator: a fork recalls what its source was taught and
 * the source never learns what the fork is told; a fork at a turn has only the conversation up to it; a busy
 * source forks at its last finished turn and its turn in flight goes on; the source's session file is left
 * byte for byte; and across a restart of the host over SQLite, a restored agent forks and a fork that had no turn
 * yet comes back still a fork.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import * as Flotta from "../packages/core/src/Flotta.js"
import { CLAUDE, hostOf, useOfflineApi } from "./support/realCli.js"
import { waitFor } from "./support/waiting.js"

const offline = useOfflineApi("flotta-fork")

const realFleet = (options: Flotta.FleetOptions = {}) =>
  Flotta.layer({ claudePath: CLAUDE, env: offline.env, ...options }).pipe(Layer.provide(NodeContext.layer))

/** The CLI's session file of a session started in `cwd` (CLAUDE-CLI.md, "Files the CLI writes"). */
const sessionFile = (cwd: string, sessionId: string) =>
  path.join(offline.env["CLAUDE_CONFIG_DIR"]!, "projects", cwd.replace(/[^A-Za-z0-9]/g, "-"), `${sessionId}.jsonl`)

describe("fork with the real claude CLI", () => {
  it.scopedLive(
    "the fork recalls the source's fact, the source never learns the fork's, its file stays as it was",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        const cwd = offline.workdir("fork-whole")
        const source = yield* fleet.spawn("source", { cwd })
        assert.strictEqual(yield* fleet.ask("source", "REMEMBER PELICAN"), "OK, I will remember that.")
        const file = sessionFile(cwd, source.sessionId)
        const before = fs.readFileSync(file, "utf8")
        const fork = yield* fleet.fork("source", "fork")
        assert.notStrictEqual(fork.sessionId, source.sessionId)
        assert.deepInclude(fork.forkedFrom!, { agent: "source", turnId: "t1", sessionId: source.sessionId })
        assert.strictEqual(yield* fleet.ask("fork", "RECALL"), "The fact is: PELICAN")
        assert.strictEqual(yield* fleet.ask("fork", "REMEMBER HERON"), "OK, I will remember that.")
        assert.strictEqual(yield* fleet.ask("fork", "RECALL"), "The fact is: HERON")
        assert.strictEqual(fs.readFileSync(file, "utf8"), before, "the source's session file is unchanged")
        assert.strictEqual(yield* fleet.ask("source", "RECALL"), "The fact is: PELICAN", "the source learnt nothing")
        assert.isTrue(fs.existsSync(sessionFile(cwd, fork.sessionId)), "the fork writes a session file of its own")
        const turns = yield* fleet.transcript("fork")
        assert.strictEqual(turns[0]!.marks?.[0]?._tag, "Forked")
      }).pipe(Effect.provide(realFleet())),
    { timeout: 180_000 }
  )

  it.scopedLive(
    "a fork at t1 does not know t2's fact; a busy source forks at its last finished turn",
    () =>
      Effect.gen(function*() {
        const fleet = yield* Flotta.Flotta
        yield* fleet.spawn("teacher", { cwd: offline.workdir("fork-at") })
        yield* fleet.ask("teacher", "REMEMBER PELICAN")
        yield* fleet.ask("teacher", "REMEMBER OTTER")
        yield* fleet.fork("teacher", "early", { at: "t1" })
        yield* fleet.fork("teacher", "late")
        assert.strictEqual(yield* fleet.ask("early", "RECALL"), "The fact is: PELICAN")
        assert.strictEqual(yield* fleet.ask("late", "RECALL"), "The fact is: OTTER")

        // The teacher is mid-turn (the model streams for 8 s): its fork is cut at t2, and t3 still ends well.
        const busy = yield* fleet.prompt("teacher", "SLOW 8000 still here")
        yield* waitFor(fleet.status("teacher"), (s) => s.current === busy, "the slow turn to start")
        const inFlight = yield* Effect.fork(fleet.wait("teacher", busy))
        const during = yield* fleet.fork("teacher", "during")
        assert.strictEqual(during.forkedFrom?.turnId, "t2")
        assert.strictEqual(yield* fleet.ask("during", "RECALL"), "The fact is: OTTER")
        assert.strictEqual((yield* Fiber.join(inFlight)).text, "SLOW DONE still here")
      }).pipe(Effect.provide(realFleet())),
    { timeout: 240_000 }
  )
})

/** One host's life over a store file. */
const host = (file: string) => hostOf(realFleet({ store: { sqlite: file } }))

describe("fork across a restart of the host, with the real claude CLI", () => {
  it.live(
    "a restored agent forks with its memory; a fork that had no turn comes back and still forks",
    () =>
      Effect.gen(function*() {
        const file = path.join(offline.workdir("fork-restart"), "state.db")
        const cwd = offline.workdir("fork-restart-agents")
        yield* host(file)((fleet) =>
          Effect.gen(function*() {
            yield* fleet.spawn("keeper", { cwd })
            yield* fleet.ask("keeper", "REMEMBER PELICAN")
            yield* fleet.fork("keeper", "unborn")
          })
        )
        yield* host(file)((fleet) =>
          Effect.gen(function*() {
            assert.deepStrictEqual(fleet.restored.restored.map((r) => r.name).sort(), ["keeper", "unborn"])
            yield* fleet.fork("keeper", "after")
            assert.strictEqual(yield* fleet.ask("after", "RECALL"), "The fact is: PELICAN")
            assert.strictEqual(yield* fleet.ask("unborn", "RECALL"), "The fact is: PELICAN")
            assert.strictEqual((yield* fleet.info("unborn")).forkedFrom?.agent, "keeper")
          })
        )
      }),
    { timeout: 300_000 }
  )
})
