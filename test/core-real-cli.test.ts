/**
 * The engine against the real pinned `claude` binary, offline, talking to the project's fake Messages API.
 * Every behaviour that depends on the CLI is shown here at least once.
 */
import { NodeContext } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { execFileSync, spawn as spawnChild } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import * as Flotta from "../packages/core/src/Flotta.js"
import { CLAUDE, isAlive, ROOT, useOfflineApi, waitGone } from "./support/realCli.js"
import { waitFor } from "./support/waiting.js"

const offline = useOfflineApi("flotta-real")
const workdir = offline.workdir

const realFleet = (options: Flotta.FleetOptions = {}) =>
  Flotta.layer({ claudePath: CLAUDE, ...options }).pipe(Layer.provide(NodeContext.layer))

const tagOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? (exit.cause.error as { _tag: string })._tag : "success"

describe("the engine with the real claude CLI", () => {
  it.scopedLive("remembers a fact across turns and reports per-turn cost and session", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const info = yield* fleet.spawn("memory", { cwd: workdir("memory"), env: offline.env })
      assert.isNumber(info.pid)
      assert.strictEqual(yield* fleet.ask("memory", "REMEMBER the launch code is 4217"), "OK, I will remember that.")
      const recall = yield* fleet.askResult("memory", "RECALL")
      assert.strictEqual(recall.text, "The fact is: the launch code is 4217")
      assert.isAbove(recall.costUsd, 0)
      const first = (yield* fleet.transcript("memory"))[0]!
      // The CLI's total is cumulative; each turn reports its own share, so the two are close, not doubled.
      assert.closeTo(recall.costUsd, first.costUsd, first.costUsd * 0.5)
      assert.strictEqual(recall.sessionId, info.sessionId)
    }).pipe(Effect.provide(realFleet())))

  it.scopedLive("a read-only agent's tool call runs, and a Write it insists on is refused and leaves no file", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const dir = workdir("reader")
      fs.writeFileSync(path.join(dir, "notes.txt"), "alpha beta gamma\n")
      yield* fleet.spawn("reader", { cwd: dir, env: offline.env })
      const read = yield* fleet.askResult("reader", `READ ${path.join(dir, "notes.txt")}`)
      assert.match(read.text, /^TOOL_RESULT Read: .*alpha beta gamma/s)
      assert.strictEqual(read.modelCalls, 2)
      const target = path.join(dir, "evil.txt")
      const write = yield* fleet.askResult("reader", `WRITE ${target} pwned`)
      assert.match(write.text, /^DENIED/)
      assert.isFalse(fs.existsSync(target), "a read-only agent wrote a file")
      const transcript = yield* fleet.transcript("reader")
      assert.strictEqual(transcript[0]!.toolCalls[0]!.name, "Read")
      assert.strictEqual(transcript[1]!.toolCalls[0]!.name, "Write")
    }).pipe(Effect.provide(realFleet())))

  it.scopedLive("a policy function is asked: it allows a Write (the file appears) and denies a Bash", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const dir = workdir("policy")
      const asked: Array<string> = []
      yield* fleet.spawn("policy", {
        cwd: dir,
        env: offline.env,
        permission: (tool) => {
          asked.push(tool)
          return tool === "Bash" ? { behavior: "deny", message: "no shell for you" } : { behavior: "allow" }
        }
      })
      const target = path.join(dir, "made.txt")
      const wrote = yield* fleet.ask("policy", `WRITE ${target} hello from the model`)
      assert.strictEqual(wrote, `WROTE ${target}`)
      assert.strictEqual(fs.readFileSync(target, "utf8"), "hello from the model\n")
      const bash = yield* fleet.askResult("policy", "BASH touch " + path.join(dir, "nope"))
      assert.match(bash.text, /^DENIED: .*no shell for you/)
      assert.strictEqual(bash.permissionDenials[0]?.tool_name, "Bash")
      assert.isFalse(fs.existsSync(path.join(dir, "nope")))
      assert.includeMembers(asked, ["Write", "Bash"])
      const decisions = (yield* fleet.reports({ agent: "policy", kinds: ["permission"] })).entries
      assert.deepStrictEqual(
        decisions.map((e) => [(e.data as { tool: string }).tool, (e.data as { decision: string }).decision]),
        [["Write", "allow"], ["Bash", "deny"]]
      )
    }).pipe(Effect.provide(realFleet())))

  it.scopedLive("interrupt ends a streaming turn as TurnInterrupted and the session goes on", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("stopper", { cwd: workdir("stopper"), env: offline.env })
      const slow = yield* fleet.prompt("stopper", "SLOW 8000 never finished")
      yield* waitFor(fleet.status("stopper"), (s) => s.current === slow)
      yield* Effect.sleep("500 millis")
      assert.isTrue(yield* fleet.interrupt("stopper"))
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.wait("stopper", slow))), "TurnInterrupted")
      assert.strictEqual(yield* fleet.ask("stopper", "ECHO after the interrupt"), "ECHO: after the interrupt")
    }).pipe(Effect.provide(realFleet())))

  it.scopedLive("an API error is TurnFailed with the HTTP status", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* fleet.spawn("unlucky", { cwd: workdir("unlucky"), env: offline.env })
      const exit = yield* Effect.exit(fleet.ask("unlucky", "ERROR 500"))
      assert.strictEqual(tagOf(exit), "TurnFailed")
      if (Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error._tag === "TurnFailed") {
        assert.strictEqual(exit.cause.error.status, 500)
      }
    }).pipe(Effect.provide(realFleet())))

  it.scopedLive("a crash mid-turn fails the turn; the agent restarts with --resume and still remembers", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const before = yield* fleet.spawn("phoenix", { cwd: workdir("phoenix"), env: offline.env })
      yield* fleet.ask("phoenix", "REMEMBER the password is swordfish")
      const doomed = yield* fleet.prompt("phoenix", "SLOW 10000 doomed")
      const queued = yield* fleet.prompt("phoenix", "RECALL")
      yield* waitFor(fleet.status("phoenix"), (s) => s.current === doomed)
      process.kill(before.pid!, "SIGKILL")
      assert.strictEqual(tagOf(yield* Effect.exit(fleet.wait("phoenix", doomed))), "AgentCrashed")
      const recalled = yield* fleet.wait("phoenix", queued)
      assert.strictEqual(recalled.text, "The fact is: the password is swordfish")
      const after = yield* fleet.info("phoenix")
      assert.notStrictEqual(after.pid, before.pid)
      assert.strictEqual(after.sessionId, before.sessionId)
      assert.isFalse(isAlive(before.pid!))
    }).pipe(Effect.provide(realFleet({ restartBackoff: "200 millis" }))))

  it.scopedLive("two agents work concurrently", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      yield* Effect.forEach(["left", "right"], (n) => fleet.spawn(n, { cwd: workdir(n), env: offline.env }), {
        concurrency: 2
      })
      yield* Effect.forEach(["left", "right"], (n) => fleet.ask(n, "SLOW 1500 together"), { concurrency: 2 })
      const [left, right] = yield* Effect.forEach(["left", "right"], (n) => fleet.transcript(n))
      // Their turns overlapped in time: each started before the other finished.
      assert.isTrue(left![0]!.startedAt! < right![0]!.finishedAt! && right![0]!.startedAt! < left![0]!.finishedAt!)
    }).pipe(Effect.provide(realFleet())))

  it.live("close and shutdown leave no process behind", () =>
    Effect.gen(function*() {
      const pids = yield* Effect.scoped(
        Effect.gen(function*() {
          const fleet = yield* Flotta.Flotta
          const a = yield* fleet.spawn("closed-one", { cwd: workdir("closed-one"), env: offline.env })
          const b = yield* fleet.spawn("left-open", { cwd: workdir("left-open"), env: offline.env })
          yield* fleet.prompt("left-open", "SLOW 20000 busy at shutdown")
          yield* fleet.close("closed-one")
          assert.isTrue(yield* waitGone(a.pid!), "close left the child running")
          return [b.pid!]
        }).pipe(Effect.provide(realFleet()))
      )
      for (const pid of pids) assert.isTrue(yield* waitGone(pid), `pid ${pid} outlived the fleet`)
    }))

  it.scopedLive("many sessions started at once all come up (admission a few at a time)", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta.Flotta
      const names = Array.from({ length: 12 }, (_, i) => `crowd-${i}`)
      const infos = yield* Effect.forEach(names, (n) => fleet.spawn(n, { cwd: workdir(n), env: offline.env }), {
        concurrency: "unbounded"
      })
      assert.strictEqual(infos.length, 12)
      const outcomes = yield* fleet.broadcast("ECHO roll call", { timeout: "60 seconds" })
      assert.strictEqual(outcomes.filter((o) => o.ok).length, 12)
    }).pipe(Effect.provide(realFleet({ maxConcurrentStarts: 3 }))))
})

describe("children never outlive their host", () => {
  it("when the host process is SIGKILLed, its claude children exit because their stdin closes", async () => {
    // The host inherits the offline environment and passes it on: nothing is set per agent.
    const host = spawnChild(process.execPath, [path.join(ROOT, "test", "fixtures", "host.mjs"), CLAUDE, offline.root], {
      env: { ...process.env, ...offline.env },
      stdio: ["ignore", "pipe", "inherit"]
    })
    const pids: Array<number> = []
    const lines = readline.createInterface({ input: host.stdout! })
    for await (const line of lines) {
      if (line.startsWith("pid ")) pids.push(Number(line.slice(4)))
      if (line === "ready") break
    }
    assert.strictEqual(pids.length, 2)
    for (const pid of pids) assert.isTrue(isAlive(pid))
    host.kill("SIGKILL")
    for (const pid of pids) assert.isTrue(await Effect.runPromise(waitGone(pid)), `child ${pid} outlived its host`)
    // Nothing else of ours is left either.
    const left = execFileSync("ps", ["-eo", "pid,args"], { encoding: "utf8" })
      .split("\n")
      .filter((l) => l.includes(offline.root) && !l.includes("ps -eo"))
    assert.deepStrictEqual(left, [])
  })
})
