/**
 * `--help` as a script or a pager gets it, through a pipe: plain text (no escape codes), with a real description
 * under every option and argument and none of @effect/cli's filler. (On a terminal: test/cli-terminal.test.ts.)
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runFlottaAll } from "./support/cli.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-help-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

describe("--help through a pipe", () => {
  const COMMANDS = [
    "run",
    "serve",
    "mcp",
    "repl",
    "init",
    "doctor",
    "list",
    "status",
    "ask",
    "prompt",
    "result",
    "reports",
    "transcript",
    "close",
    "unpark",
    "schedule",
    ...["status", "keep-going", "work-today", "work-on", "pause", "resume", "stop-for-today", "run", "scan"].map(
      (sub) => `schedule ${sub}`
    ),
    "findings",
    "approvals",
    "approve",
    "deny"
  ]

  it("is plain text with a real description under every option and argument", { timeout: 300_000 }, async () => {
    const argvs = [["--help"], ...COMMANDS.map((command) => [...command.split(" "), "--help"])]
    const results = await runFlottaAll(dir, argvs)
    results.forEach((ran, i) => {
      const line = `flotta ${argvs[i]!.join(" ")}`
      assert.strictEqual(ran.code, 0, `${line}: ${ran.stderr}`)
      assert.notInclude(ran.stdout, "\u001b[", `${line} prints escape codes into a pipe`)
      assert.notInclude(ran.stdout, "A user-defined piece of text", `${line} shows @effect/cli's filler`)
    })
    assert.match(results[0]!.stdout, /^flotta\n\nflotta \d+\.\d+\.\d+/)
    const run = results[1]!.stdout
    assert.include(run, "[--permission read_only | full | ask]", "the usage line lists the choices")
    assert.match(run, /\n--permission read_only \| full \| ask\n\n {2}One of /, "and so does the option's help")
    assert.match(run, /\n<prompt>\n\n {2}The task: what the agent should do\n/)
  })
})
