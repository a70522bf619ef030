/** The CLI's session files: their place, whole-line growth, and writing one back under another host's key. */
import * as NodeContext from "@effect/platform-node/NodeContext"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as SessionMirror from "../src/SessionMirror.js"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "flotta-mirror-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

describe("SessionMirror", () => {
  it("keys a cwd as the CLI does and finds the config dir from the environment", () => {
    assert.strictEqual(SessionMirror.cwdKey("/home/me/my_repo.v2"), "-home-me-my-repo-v2")
    assert.strictEqual(SessionMirror.configDir({ CLAUDE_CONFIG_DIR: "/c", HOME: "/h" }), "/c")
    assert.strictEqual(SessionMirror.configDir({ HOME: "/h" }), path.join("/h", ".claude"))
  })

  it.scoped("reads whole lines only, and goes on from where it stopped", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = SessionMirror.sessionFile(dir, "/repo", "s1")
      fs.mkdirSync(path.dirname(file), { recursive: true })
      fs.writeFileSync(file, "{\"a\":1}\n{\"b\":")
      const first = yield* SessionMirror.readGrowth(file, 0)
      assert.deepStrictEqual(first, { text: "{\"a\":1}\n", next: 8 })
      fs.appendFileSync(file, "2}\n")
      const second = yield* SessionMirror.readGrowth(file, first.next)
      assert.deepStrictEqual(second, { text: "{\"b\":2}\n", next: 16 })
      assert.deepStrictEqual(yield* SessionMirror.readGrowth(file, second.next), { text: "", next: 16 })
      assert.deepStrictEqual(yield* SessionMirror.readGrowth(path.join(dir, "missing"), 0), { text: "", next: 0 })
    }).pipe(Effect.provide(NodeContext.layer)))

  it.scoped("writes a conversation back where this host's CLI looks, and finds it there", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const file = yield* SessionMirror.writeBack(dir, "/work/repo", "s2", "line\n")
      assert.strictEqual(file, path.join(dir, "projects", "-work-repo", "s2.jsonl"))
      assert.strictEqual(fs.readFileSync(file, "utf8"), "line\n")
      assert.strictEqual(yield* SessionMirror.findSessionFile(dir, "/work/repo", "s2"), file)
      // A cwd reached another way (a link) is found by the session id under any project.
      assert.strictEqual(yield* SessionMirror.findSessionFile(dir, "/elsewhere", "s2"), file)
      assert.isUndefined(yield* SessionMirror.findSessionFile(dir, "/work/repo", "nope"))
    }).pipe(Effect.provide(NodeContext.layer)))
})
