/**
 * The fake CLI's realistic mode (FAKE_CLAUDE_FRAMES): its plain turns write the frames the real CLI wrote
 * (test/fixtures/cli-frames-2.1.332.json), every key as captured, and the engine reads them like the real thing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import * as readline from "node:readline"
import { TESTED_VERSION } from "../packages/core/src/ClaudeCli.js"
import { Flotta } from "../packages/core/src/Flotta.js"
import { FAKE_CLAUDE, fakeFleet } from "../packages/core/test/support.js"

type Json = Record<string, unknown>

const FIXTURE = path.join(import.meta.dirname, "fixtures", `cli-frames-${TESTED_VERSION}.json`)
const fixture = JSON.parse(fs.readFileSync(FIXTURE, "utf8")) as {
  readonly turns: ReadonlyArray<{ readonly name: string; readonly frames: ReadonlyArray<Json> }>
}
const capturedText = fixture.turns.find((t) => t.name === "text")!.frames

/** Every key path of a JSON value ("message.content[].text", ...), array elements merged. */
const keyPaths = (value: unknown, prefix = "", into = new Set<string>()): Set<string> => {
  if (Array.isArray(value)) { for (const v of value) keyPaths(v, `${prefix}[]`, into) }
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      into.add(`${prefix}.${k}`)
      keyPaths(v, `${prefix}.${k}`, into)
    }
  }
  return into
}

/** Runs the fake in realistic mode for the given user texts; returns every stdout frame until the last result. */
const runFake = (texts: ReadonlyArray<string>) =>
  new Promise<Array<Json>>((resolve, reject) => {
    const child = spawn(process.execPath, [
      FAKE_CLAUDE,
      "--input-format",
      "stream-json",
      "--output-format",
      "stream-json"
    ], {
      env: { ...process.env, FAKE_CLAUDE_FRAMES: FIXTURE },
      stdio: ["pipe", "pipe", "inherit"]
    })
    const frames: Array<Json> = []
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`no ${texts.length} results in time; saw ${frames.length} frames`))
    }, 10_000)
    readline.createInterface({ input: child.stdout }).on("line", (line) => {
      frames.push(JSON.parse(line) as Json)
      if (frames.filter((f) => f.type === "result").length === texts.length) {
        clearTimeout(timer)
        child.stdin.end()
        child.on("exit", () => resolve(frames))
      }
    })
    for (const text of texts) {
      child.stdin.write(
        JSON.stringify({
          type: "user",
          session_id: "",
          message: { role: "user", content: text },
          parent_tool_use_id: null
        })
          + "\n"
      )
    }
  })

describe("fake-claude with FAKE_CLAUDE_FRAMES", () => {
  it("a plain turn writes the fixture's text-turn frames: same kinds, same keys in the same order", async () => {
    const frames = await runFake(["hello", "again"])
    const first = frames.slice(0, capturedText.length)
    assert.deepStrictEqual(first.map((f) => [f.type, f.subtype]), capturedText.map((f) => [f.type, f.subtype]))
    first.forEach((frame, i) => {
      assert.deepStrictEqual(Object.keys(frame), Object.keys(capturedText[i]!), `keys of ${String(frame.type)}`)
      assert.deepStrictEqual(
        [...keyPaths(frame)].sort(),
        [...keyPaths(capturedText[i])].sort(),
        `key paths of ${String(frame.type)}`
      )
    })
    const results = frames.filter((f) => f.type === "result")
    assert.deepStrictEqual(results.map((r) => r.result), ["echo: hello", "echo: again"])
    assert.deepStrictEqual(results.map((r) => r.total_cost_usd), [0.001, 0.002])
    const assistants = frames.filter((f) => f.type === "assistant")
    assert.deepStrictEqual(
      assistants.map((a) => ((a.message as Json).content as Array<Json>)[0]!.text),
      ["echo: hello", "echo: again"]
    )
    const sessions = new Set(frames.map((f) => f.session_id))
    assert.strictEqual(sessions.size, 1, "one session id")
    assert.notInclude([...sessions], capturedText[0]!.session_id, "the session id is the fake's, not the captured one")
  })

  it.scopedLive("the engine reads the realistic frames: reply, per-turn cost, session id", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      yield* fleet.spawn("real-shaped", { env: { FAKE_CLAUDE_FRAMES: FIXTURE } })
      const one = yield* fleet.askResult("real-shaped", "hello")
      const two = yield* fleet.askResult("real-shaped", "world")
      assert.strictEqual(one.text, "echo: hello")
      assert.strictEqual(two.text, "echo: world")
      assert.closeTo(two.costUsd, 0.001, 1e-9)
      assert.strictEqual(two.subtype, "success")
      assert.strictEqual(two.sessionId, (yield* fleet.info("real-shaped")).sessionId)
      assert.deepStrictEqual(two.usage, capturedText.find((f) => f.type === "result")!.usage)
    }).pipe(Effect.provide(fakeFleet())))
})
