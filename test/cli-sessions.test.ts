/**
 * A session's own life from the shell, against one real `flotta serve --simulate` (the real claude CLI against
 * the built-in scripted model): `flotta fork` gives a new agent the conversation up to a turn (it recalls what
 * its source was taught, and nothing after `--at`), `info` and `transcript` say where it came from; `flotta
 * hibernate` ends a session's process and `flotta wake` (or a prompt) brings it back with its memory; and a bad
 * fork or hibernation is the fleet's typed error with its exit code. As text and as JSON.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runAllInProcess } from "./support/inProcess.js"
import { withServe } from "./support/serve.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-sessions-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

describe("a session's life from the shell, against a running serve", () => {
  it("fork, hibernate and wake: the fork recalls its source's fact up to --at; a sleeper wakes with its memory", {
    timeout: 300_000
  }, async () => {
    const config = { agents: [{ name: "scout" }], store: "memory" }
    await withServe(path.join(dir, "fork"), { config }, async ({ inProcess: flotta, project }) => {
      // What each command prints is checked in process (that it starts as the binary: test/cli-help.test.ts).
      const runFlottaAll = runAllInProcess
      for (const fact of ["PELICAN", "OTTER"]) {
        const taught = await flotta("ask", "scout", `REMEMBER ${fact}`)
        assert.strictEqual(taught.stdout, "OK, I will remember that.\n", taught.stderr)
      }

      const early = await flotta("fork", "scout", "early", "--at", "t1")
      assert.strictEqual(early.code, 0, early.stderr)
      assert.match(early.stdout, /^forked from scout at t1; early is up: idle, pid \d+, /)
      const late = await flotta("fork", "scout", "late", "--model", "haiku", "--json")
      assert.strictEqual(late.code, 0, late.stderr)
      const lateInfo = JSON.parse(late.stdout) as { name: string; model: string; forkedFrom: { turnId: string } }
      assert.deepStrictEqual([lateInfo.name, lateInfo.model, lateInfo.forkedFrom.turnId], ["late", "haiku", "t2"])

      const [recallEarly, recallLate, recallScout] = await runFlottaAll(project, [
        ["ask", "early", "RECALL"],
        ["ask", "late", "RECALL"],
        ["ask", "scout", "RECALL"]
      ])
      assert.strictEqual(recallEarly!.stdout, "The fact is: PELICAN\n", recallEarly!.stderr)
      assert.strictEqual(recallLate!.stdout, "The fact is: OTTER\n", recallLate!.stderr)
      assert.strictEqual(recallScout!.stdout, "The fact is: OTTER\n", recallScout!.stderr)

      const [info, transcript] = await runFlottaAll(project, [["info", "early"], ["transcript", "early"]])
      assert.include(info!.stdout, "\n  forked:     from scout at t1\n")
      assert.match(transcript!.stdout, /^early: 1 turn\n\n~ forked from scout at t1 \(session [0-9a-f-]{36}\)\nt1 /)

      // hibernate and wake: the session sleeps with no process, and wakes (or a prompt wakes it) with its memory.
      const slept = await flotta("hibernate", "early")
      assert.strictEqual(slept.code, 0, slept.stderr)
      assert.strictEqual(
        slept.stdout,
        "early is hibernated: its process ended, its conversation is kept (a prompt or `flotta wake` wakes it)\n"
      )
      const [again, status] = await runFlottaAll(project, [["hibernate", "early"], ["status", "early", "--json"]])
      assert.strictEqual(again!.stdout, "early was hibernated already\n")
      assert.strictEqual((JSON.parse(status!.stdout) as { status: string }).status, "hibernated")
      const woke = await flotta("wake", "early")
      assert.match(woke.stdout, /^early is awake: pid \d+ \(session [0-9a-f-]{36}\)\n$/)
      await flotta("hibernate", "early")
      const recalled = await flotta("ask", "early", "RECALL")
      assert.strictEqual(recalled.stdout, "The fact is: PELICAN\n", "a prompt wakes it, with its memory")
      const busy = await flotta("prompt", "late", "SLOW 20000 busy")
      assert.strictEqual(busy.code, 0, busy.stderr)
      const refused = await flotta("hibernate", "late")
      assert.strictEqual(refused.code, 12)
      assert.match(refused.stderr, /^flotta: CannotHibernate: "late" cannot hibernate now: it is working on t2/)
      await flotta("interrupt", "late")

      // compact and clear: each its next turn, waited for; what it did, in words.
      const compacted = await flotta("compact", "scout", "keep the birds")
      assert.strictEqual(compacted.code, 0, compacted.stderr)
      assert.match(
        compacted.stdout,
        /^compacted scout \(manual\): [\d,]+ → [\d,]+ tokens; context now [\d,]+ tokens, [\d.]+% of 1,000,000\n$/
      )
      const [recalled2, statusText] = await runFlottaAll(project, [["ask", "scout", "RECALL"], ["status", "scout"]])
      assert.strictEqual(recalled2!.stdout, "The fact is: OTTER\n", "the summary kept the fact")
      assert.match(statusText!.stdout, /, context [\d,]+ tokens, [\d.]+% of 1,000,000\n/)
      const cleared = await flotta("clear", "scout")
      assert.match(cleared.stdout, /^scout starts a new conversation \(session [0-9a-f-]{36}\); context now 0 tokens/)
      assert.strictEqual((await flotta("ask", "scout", "RECALL")).stdout, "I know no fact.\n")
      assert.match((await flotta("transcript", "scout")).stdout, /\n~ cleared: a new conversation \(session /)

      const [unknown, taken, badTurn] = await runFlottaAll(project, [
        ["fork", "ghost", "twin"],
        ["fork", "scout", "early"],
        ["fork", "scout", "twin", "--at", "t9"]
      ])
      assert.strictEqual(unknown!.code, 12)
      assert.match(unknown!.stderr, /^flotta: AgentNotFound: /)
      assert.strictEqual(taken!.code, 12)
      assert.match(taken!.stderr, /^flotta: AgentAlreadyExists: /)
      assert.strictEqual(badTurn!.code, 12)
      assert.match(badTurn!.stderr, /^flotta: NoResult: "scout" has no turn t9/)
    })
  })
})
