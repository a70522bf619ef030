/**
 * `flotta completion bash|zsh|fish`: the script @effect/cli generates from the command tree, for each shell, naming
 * every command (the new ones included) and their subcommands; bash accepts its script (`bash -n`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runFlottaAll } from "./support/cli.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-completion-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const COMMANDS = [
  "spawn",
  "info",
  "interrupt",
  "wait",
  "broadcast",
  "runs",
  "diff",
  "costs",
  "worktrees",
  "gc",
  "verify",
  "completion"
]

describe("flotta completion", () => {
  it("prints each shell's script, naming every command; bash accepts its own", { timeout: 120_000 }, async () => {
    const [bash, zsh, fish, builtIn, wrong] = await runFlottaAll(dir, [
      ["completion", "bash"],
      ["completion", "zsh"],
      ["completion", "fish"],
      ["--completions", "bash"],
      ["completion", "tcsh"]
    ])
    for (const [shell, ran] of [["bash", bash], ["zsh", zsh], ["fish", fish]] as const) {
      assert.strictEqual(ran!.code, 0, `${shell}: ${ran!.stderr}`)
      assert.strictEqual(ran!.stderr, "", shell)
    }
    assert.strictEqual(bash!.stdout.trimEnd(), builtIn!.stdout.trimEnd(), "the same script as --completions")

    // bash: a case per command path, and the script parses.
    for (const command of [...COMMANDS, "run", "list", "approve"]) {
      assert.include(bash!.stdout, `flotta,${command})`, `bash completes ${command}`)
    }
    assert.match(bash!.stdout, /opts="[^"]* keep-going pause resume run scan/, "and the subcommands of schedule")
    assert.include(bash!.stdout, "complete -F _flotta_bash_completions")
    const script = path.join(dir, "flotta.bash")
    fs.writeFileSync(script, bash!.stdout)
    execFileSync("bash", ["-n", script])

    // zsh and fish: each command offered with its description.
    for (const command of COMMANDS) {
      assert.match(zsh!.stdout, new RegExp(`'${command}:[A-Z]`), `zsh describes ${command}`)
      assert.match(fish!.stdout, new RegExp(`-a "${command}" -d '[A-Z]`), `fish describes ${command}`)
    }
    assert.match(zsh!.stdout, /^#compdef flotta/)
    assert.include(fish!.stdout, "complete -c flotta")

    assert.strictEqual(wrong!.code, 2)
    assert.strictEqual(wrong!.stderr, "flotta: <shell>: \"tcsh\" is not one of bash, zsh, fish\n")
    assert.strictEqual(wrong!.stdout, "")
  })
})
