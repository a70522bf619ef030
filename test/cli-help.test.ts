/**
 * `--help` as a script or a pager gets it, through a pipe: plain text (no escape codes), with a real description
 * under every option and argument and none of @effect/cli's filler. (On a terminal: test/cli-terminal.test.ts.)
 * The text is checked in process (test/support/inProcess.ts); that every command starts as the real binary and
 * prints that same text is checked once per command.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FLOTTA, runFlottaAll } from "./support/cli.js"
import { runAllInProcess } from "./support/inProcess.js"

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
    "spawn",
    "info",
    "interrupt",
    "wait",
    "broadcast",
    "fork",
    "compact",
    "clear",
    "hibernate",
    "wake",
    "runs",
    "diff",
    "costs",
    "worktrees",
    "gc",
    "verify",
    "schedule",
    ...["status", "keep-going", "work-today", "work-on", "pause", "resume", "stop-for-today", "run", "scan"].map(
      (sub) => `schedule ${sub}`
    ),
    "findings",
    "approvals",
    "approve",
    "deny",
    "notify",
    "notify test",
    "completion"
  ]

  it("is plain text with a real description under every option and argument", { timeout: 300_000 }, async () => {
    const argvs = [["--help"], ...COMMANDS.map((command) => [...command.split(" "), "--help"])]
    const results = await runAllInProcess(dir, argvs)
    results.forEach((ran, i) => {
      const line = `flotta ${argvs[i]!.join(" ")}`
      assert.strictEqual(ran.code, 0, `${line}: ${ran.stderr}`)
      assert.notInclude(ran.stdout, "\u001b[", `${line} prints escape codes into a pipe`)
      assert.notInclude(ran.stdout, "A user-defined piece of text", `${line} shows @effect/cli's filler`)
    })
    assert.match(results[0]!.stdout, /^flotta \d+\.\d+\.\d+: /)
    const run = results[1]!.stdout
    assert.include(run, "[--permission read_only | full | ask]", "the usage line lists the choices")
    assert.match(run, /\n--permission read_only \| full \| ask\n\n {2}One of /, "and so does the option's help")
    assert.match(run, /\n<prompt>\n\n {2}The task: what the agent should do\.\n/)

    // `flotta --help` lists every command, each with its summary.
    const listed = results[0]!.stdout.split("\n").flatMap((l) => /^ {2}([a-z-]+) {2,}\S/.exec(l)?.[1] ?? [])
    assert.sameMembers(
      [...new Set(listed)],
      [...new Set(COMMANDS.map((c) => c.split(" ")[0]!))],
      "the root's help lists every command"
    )
    // Every description (the command's, each argument's, each option's) is a sentence: the CLI reference is made
    // from them. @effect/cli's own lines (the kind of value, optional or not, its built-in options) are left out.
    const BUILT_IN =
      /^(This setting is optional|A true or false value|One of the following|Generate a completion|Sets the minimum log level|Show the help|Start wizard|Show the version|This setting is a |This argument is optional|\d+ {2})/
    results.slice(1).forEach((ran, i) => {
      const line = `flotta ${argvs[i + 1]!.join(" ")}`
      let section = ""
      const paragraphs: Array<string> = []
      let previous = ""
      for (const text of ran.stdout.split("\n")) {
        if (/^[A-Z]+$/.test(text)) section = text
        else if (section === "DESCRIPTION" && text.length > 0 && !text.startsWith(" ")) {
          // A paragraph may be wrapped by hand: its lines follow one another.
          if (previous.length > 0) paragraphs[paragraphs.length - 1] += ` ${text}`
          else paragraphs.push(text)
        } else if ((section === "ARGUMENTS" || section === "OPTIONS") && /^ {2}\S/.test(text)) {
          paragraphs.push(text.trim())
        }
        previous = section === "DESCRIPTION" && !/^[A-Z]+$/.test(text) && !text.startsWith(" ") ? text : ""
      }
      assert.isNotEmpty(paragraphs, `${line} has a description`)
      for (const paragraph of paragraphs.filter((p) => !BUILT_IN.test(p))) {
        assert.match(paragraph, /[.:]$/, `${line}: "${paragraph}" is not a sentence`)
      }
    })
  })

  it("every command starts as the built binary and prints the help it prints in process", {
    timeout: 300_000
  }, async () => {
    // One start per command (a subcommand loads its command's chunk): the bundle runs each, and says the same.
    const argvs = [["--help"], ...[...new Set(COMMANDS.map((c) => c.split(" ")[0]!))].map((c) => [c, "--help"])]
    const [real, inProcess] = [await runFlottaAll(dir, argvs), await runAllInProcess(dir, argvs)]
    real.forEach((ran, i) => {
      const line = `flotta ${argvs[i]!.join(" ")}`
      assert.strictEqual(ran.code, 0, `${line}: ${ran.stderr}`)
      assert.strictEqual(ran.stdout, inProcess[i]!.stdout, `${line} as the binary`)
    })
  })

  it("ends quietly when its reader goes away early (`flotta doctor | head -1`)", async () => {
    const child = spawn(process.execPath, [FLOTTA, "doctor"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })
    let stderr = ""
    child.stderr.on("data", (d) => (stderr += d))
    // The reader takes the first line, then leaves, as `head -1` does.
    child.stdout.once("data", () => child.stdout.destroy())
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve))
    assert.notInclude(stderr, "EPIPE", stderr)
    assert.notInclude(stderr, "Unhandled", stderr)
    assert.notStrictEqual(code, 1, "not an internal error")
  })
})
