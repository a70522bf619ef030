/**
 * `flotta run` driven as a user would: the compiled binary as a child process, the real claude CLI, and the
 * built-in simulator (`--simulate`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

import { runFlotta } from "./support/cli.js"
import { newRepo } from "./support/git.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cli-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

describe("flotta run", () => {
  it("prints the reply on stdout, pipe-clean, and a cost and duration footer on stderr", async () => {
    const ran = await runFlotta(dir, ["run", "--simulate", "ECHO hello from a user"])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.strictEqual(ran.stdout, "ECHO: hello from a user\n")
    assert.match(ran.stderr, /— \$\d+\.\d{4} · \d+\.\ds · 1 model call · session [0-9a-f-]{36}/)
    assert.notMatch(ran.stderr, /\u280b|\r/, "no spinner when stderr is not a terminal")
  })

  it("prints the structured output as JSON with --json-schema", async () => {
    const schema = JSON.stringify({ type: "object", properties: { n: { type: "number" } }, required: ["n"] })
    const ran = await runFlotta(dir, ["run", "--simulate", "--json-schema", schema, "STRUCTURED {\"n\": 42}"])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.deepStrictEqual(JSON.parse(ran.stdout), { n: 42 })
  })

  it("gives each failure kind its own exit code and a message on stderr", async () => {
    const cases: Array<[Array<string>, number, RegExp]> = [
      [["run", "--simulate", "--max-turns", "2", "LOOP"], 7, /MaxTurnsReached/],
      [["run", "--simulate", "--max-budget-usd", "0.01", "EXPENSIVE"], 8, /BudgetExceeded/],
      [["run", "--simulate", "ERROR 500"], 5, /TurnFailed.*HTTP 500/],
      [["run", "--simulate", "--timeout", "soon", "x"], 2, /--timeout: "soon" is not a duration/],
      [["run", "--simulate", "--cleanup", "x"], 2, /--cleanup.*--worktree/],
      [["run"], 2, /Missing argument <prompt>/]
    ]
    for (const [args, code, message] of cases) {
      const ran = await runFlotta(dir, args)
      assert.strictEqual(ran.code, code, `${args.join(" ")}: ${ran.stderr}`)
      assert.match(ran.stderr, message)
      assert.strictEqual(ran.stdout, "")
    }
  })

  it("--worktree isolates the run; the footer says where, and what it changed", async () => {
    const repo = path.join(dir, "repo")
    newRepo(repo)
    const worktree = path.join(repo, ".claude", "worktrees", "cli-run")
    const ran = await runFlotta(repo, [
      "run",
      "--simulate",
      "--worktree",
      "--name",
      "cli-run",
      "--allow",
      "Read,Write",
      `WRITE ${worktree}/a.txt A`
    ])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.strictEqual(ran.stdout, `WROTE ${worktree}/a.txt\n`)
    assert.include(ran.stderr, `worktree ${worktree}`)
    assert.match(
      ran.stderr,
      /\ncli-run: worktree-cli-run against [0-9a-f]{12}\n {2}\+1 +-0 +a\.txt\n1 file changed, 1 line added/
    )
    assert.isTrue(fs.existsSync(path.join(worktree, "a.txt")))
    assert.isFalse(fs.existsSync(path.join(repo, "a.txt")))
  })

  it("--attempts and --check: the attempt that passes wins; with none passing, NoAttemptPassed and exit 14", {
    timeout: 240_000
  }, async () => {
    const repo = path.join(dir, "attempts")
    newRepo(repo)
    const best = await runFlotta(repo, [
      "run",
      "--simulate",
      "--name",
      "best",
      "--attempts",
      "3",
      "--pick",
      "cheapest",
      "--allow",
      "Bash",
      "--check",
      "test \"$(cat n.txt)\" = 2",
      "BASH echo {{attempt}} > n.txt"
    ])
    assert.strictEqual(best.code, 0, best.stderr)
    assert.match(best.stdout, /^BASH_RESULT: /)
    assert.match(best.stderr, /— attempt 2 of 3 won; all together \$\d+\.\d{4}\n/)
    assert.match(
      best.stderr,
      /\n {2} 1 {2}failed {6}\$\d+\.\d{4} {2}test "\$\(cat n\.txt\)" = 2 exited 1 · branch worktree-best-a1\n/
    )
    assert.match(
      best.stderr,
      new RegExp(`\\n {2} 2 {2}passed {6}\\$\\d+\\.\\d{4} {2}${repo}/\\.claude/worktrees/best-a2\\n`)
    )
    assert.strictEqual(fs.readFileSync(path.join(repo, ".claude", "worktrees", "best-a2", "n.txt"), "utf8"), "2\n")
    const none = await runFlotta(repo, ["run", "--simulate", "--attempts", "2", "--check", "false", "ECHO try"])
    assert.strictEqual(none.code, 14, none.stderr)
    assert.match(
      none.stderr,
      /NoAttemptPassed: no attempt of "run-[0-9a-f]{8}" passed \(attempt 1: `false` exited 1; attempt 2: `false` exited 1\)/
    )
    const usage = await runFlotta(repo, ["run", "--simulate", "--pick", "first", "x"])
    assert.strictEqual(usage.code, 2)
    assert.match(usage.stderr, /--pick: picks among attempts: add --attempts/)
  })

  it("a bad config names the file, the field and what was expected", async () => {
    const project = path.join(dir, "badconfig")
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, "flotta.config.json"), JSON.stringify({ mcp: { port: "eighty" } }))
    const ran = await runFlotta(project, ["run", "--simulate", "x"])
    assert.strictEqual(ran.code, 3, ran.stderr)
    assert.include(ran.stderr, path.join(project, "flotta.config.json"))
    assert.match(ran.stderr, /mcp\.port: expected a number/)
  })
})
