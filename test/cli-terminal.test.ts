/**
 * The command as a person at a terminal sees it (a pseudo-terminal through util-linux `script`), and the
 * TypeScript config file (`flotta.config.ts` with `defineConfig`).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FLOTTA, ROOT, runFlotta } from "./support/cli.js"

let project: string
beforeAll(() => {
  // A project of a user's: outside any node_modules (Node 24 strips no types there), a CommonJS one (no
  // package.json), where `import { defineConfig } from "@flotta/cli"` resolves to this workspace's package.
  project = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "cli-terminal-")))
  fs.mkdirSync(path.join(project, "node_modules", "@flotta"), { recursive: true })
  fs.symlinkSync(path.join(ROOT, "packages", "cli"), path.join(project, "node_modules", "@flotta", "cli"))
})
afterAll(() => {
  fs.rmSync(project, { recursive: true, force: true })
})

describe("on a terminal", () => {
  it("flotta run shows a spinner with the elapsed time and the agent's step on stderr", async () => {
    const command = `${process.execPath} ${FLOTTA} run --simulate 'SLOW 1200 done slowly'`
    const screen = await new Promise<string>((resolve, reject) => {
      execFile("script", ["-qec", command, "/dev/null"], { cwd: project, timeout: 60_000 }, (error, stdout) => {
        if (error !== null) return reject(error)
        resolve(stdout)
      })
    })
    assert.match(screen, /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] flotta run \d+\.\ds · /)
    assert.include(screen, "SLOW DONE done slowly")
    assert.include(screen, "\r\x1b[K", "the spinner line is redrawn in place and cleared")
  })
})

/** What a command prints on a pseudo-terminal (stdout and stderr together). */
const onTerminal = (args: string, env: Record<string, string> = {}) =>
  new Promise<string>((resolve, reject) => {
    const command = `${process.execPath} ${FLOTTA} ${args}`
    execFile(
      "script",
      ["-qec", command, "/dev/null"],
      { cwd: project, timeout: 60_000, env: { ...process.env, ...env } },
      (error, stdout) => (error !== null ? reject(error) : resolve(stdout))
    )
  })

describe("--help on a terminal", () => {
  it("is coloured, and plain with NO_COLOR; either way without @effect/cli's filler", async () => {
    const coloured = await onTerminal("run --help")
    assert.include(coloured, "\u001b[")
    assert.include(coloured, "The task: what the agent should do.")
    assert.notInclude(coloured, "A user-defined piece of text.")
    const plain = await onTerminal("run --help", { NO_COLOR: "1" })
    assert.notInclude(plain, "\u001b[")
    assert.include(plain, "--permission read_only | full | ask")
    assert.notInclude(plain, "A user-defined piece of text.")
  })
})

describe("flotta.config.ts", () => {
  it("is loaded with defineConfig and validated like the JSON one", async () => {
    fs.writeFileSync(
      path.join(project, "flotta.config.ts"),
      [
        "import { defineConfig } from \"@flotta/cli\"",
        "",
        "export default defineConfig({",
        "  fleetDefaults: { model: \"sonnet\" },",
        "  agents: [{ name: \"typed-scout\" }, { name: \"runner\", lifecycle: \"run\", worktree: true }]",
        "})",
        ""
      ].join("\n")
    )
    const doctor = await runFlotta(project, ["doctor"])
    assert.include(doctor.stdout, `config: ${path.join(project, "flotta.config.ts")}: 1 session(s), 1 run template(s)`)
    fs.writeFileSync(
      path.join(project, "flotta.config.ts"),
      "export default { agents: [{ name: \"ok\" }], mcp: { port: -1 } }\n"
    )
    const bad = await runFlotta(project, ["run", "--simulate", "x"])
    assert.strictEqual(bad.code, 3, bad.stderr)
    assert.match(bad.stderr, /flotta\.config\.ts: mcp\.port: /)
  })
})
