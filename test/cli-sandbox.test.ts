/**
 * The sandbox from the command line, as a user drives it: `flotta run --sandbox` (the compiled binary, the real
 * claude CLI and the built-in simulator), its flags' bad values named, its own exit code where the sandbox cannot
 * run, and `flotta doctor`'s word on the sandbox.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runFlotta } from "./support/cli.js"
import { newRepo } from "./support/git.js"

let dir: string
/** A PATH with socat and git but no bwrap. */
let noBwrap: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-cli-sandbox-")))
  noBwrap = path.join(dir, "no-bwrap")
  fs.mkdirSync(noBwrap)
  for (const tool of ["socat", "git"]) {
    fs.symlinkSync(execFileSync("which", [tool], { encoding: "utf8" }).trim(), path.join(noBwrap, tool))
  }
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

interface DoctorJson {
  readonly ok: boolean
  readonly checks: ReadonlyArray<{ readonly level: string; readonly topic: string; readonly text: string }>
}
const sandboxCheck = (stdout: string) => (JSON.parse(stdout) as DoctorJson).checks.find((c) => c.topic === "sandbox")

describe("flotta run --sandbox", () => {
  it("a sandboxed full run in its worktree writes there and not outside", async () => {
    const repo = newRepo(path.join(dir, "run"))
    const outside = path.join(dir, "outside")
    fs.mkdirSync(outside)
    const ran = await runFlotta(repo, [
      "run",
      "--simulate",
      "--sandbox",
      "--permission",
      "full",
      "--worktree",
      "--name",
      "boxed",
      `BASH touch here.txt; echo in=$?; touch ${outside}/x.txt 2>/dev/null; echo out=$?`
    ])
    assert.strictEqual(ran.code, 0, ran.stderr)
    assert.match(ran.stdout, /in=0\s+out=1/)
    assert.isTrue(fs.existsSync(path.join(repo, ".claude", "worktrees", "boxed", "here.txt")))
    assert.isFalse(fs.existsSync(path.join(outside, "x.txt")))
  })

  it("each bad value names its flag; the host and path flags imply --sandbox", async () => {
    const url = await runFlotta(dir, ["run", "--simulate", "--sandbox-allow-host", "https://github.com", "ECHO x"])
    assert.strictEqual(url.code, 2)
    assert.include(url.stderr, "--sandbox-allow-host: \"https://github.com\" is a URL or a path, not a host")
    const port = await runFlotta(dir, ["run", "--simulate", "--sandbox-allow-host", "db:99999", "ECHO x"])
    assert.strictEqual(port.code, 2)
    assert.include(port.stderr, "--sandbox-allow-host: \"db:99999\" has a port outside 1-65535")
    const missing = await runFlotta(dir, ["run", "--simulate", "--sandbox-writable", "/no/such/dir", "ECHO x"])
    assert.strictEqual(missing.code, 2)
    assert.include(missing.stderr, "--sandbox-writable: \"/no/such/dir\" does not exist")
    // Without bwrap, a host flag alone already makes the run sandboxed: it is refused, not run open.
    const implied = await runFlotta(dir, ["run", "--simulate", "--sandbox-allow-host", "github.com", "ECHO x"], {
      PATH: noBwrap
    })
    assert.strictEqual(implied.code, 15, implied.stderr)
  })

  it("exit code 15 and the install command where the sandbox cannot run", async () => {
    const ran = await runFlotta(dir, ["run", "--simulate", "--sandbox", "ECHO never"], { PATH: noBwrap })
    assert.strictEqual(ran.code, 15, ran.stderr)
    assert.include(ran.stderr, "SandboxUnavailable")
    assert.include(ran.stderr, "bwrap (bubblewrap) is not on PATH; install it:")
    assert.strictEqual(ran.stdout, "")
    // The same machine runs an unsandboxed run.
    assert.strictEqual((await runFlotta(dir, ["run", "--simulate", "ECHO fine"], { PATH: noBwrap })).code, 0)
  })
})

describe("flotta doctor on the sandbox", () => {
  it("says it works here, having run a command in it", async () => {
    const ran = await runFlotta(dir, ["doctor", "--json"])
    assert.deepInclude(sandboxCheck(ran.stdout), { level: "ok" })
    assert.match(sandboxCheck(ran.stdout)!.text, /^works \(`bwrap .*true` ran\)$/)
  })

  it("without bwrap: a warning (naming sandboxed run templates), a failure (exit 15) for a sandboxed session", async () => {
    const plain = await runFlotta(dir, ["doctor", "--json"], { PATH: noBwrap })
    assert.deepInclude(sandboxCheck(plain.stdout), { level: "warn" })
    assert.include(sandboxCheck(plain.stdout)!.text, "bwrap (bubblewrap) is not on PATH; install it:")
    assert.include(sandboxCheck(plain.stdout)!.text, "only sandboxed agents need it")

    // `flotta init`'s run templates are sandboxed: they would fail when fired, which is worth a warning.
    const project = path.join(dir, "project")
    fs.mkdirSync(project)
    assert.strictEqual((await runFlotta(project, ["init"])).code, 0)
    const templates = await runFlotta(project, ["doctor", "--json"], { PATH: noBwrap })
    assert.deepInclude(sandboxCheck(templates.stdout), { level: "warn" })
    assert.include(sandboxCheck(templates.stdout)!.text, "sandboxed in the config: issue-runner, issue-filer")

    // A sandboxed session could not boot: that blocks `flotta serve`.
    const session = path.join(dir, "session")
    fs.mkdirSync(session)
    fs.writeFileSync(
      path.join(session, "flotta.config.json"),
      JSON.stringify({ store: "memory", agents: [{ name: "boxed-scout", sandbox: true }] })
    )
    const blocked = await runFlotta(session, ["doctor", "--json"], { PATH: noBwrap })
    assert.strictEqual(blocked.code, 15, blocked.stderr)
    assert.deepInclude(sandboxCheck(blocked.stdout), { level: "fail" })
    assert.include(sandboxCheck(blocked.stdout)!.text, "sandboxed in the config: boxed-scout")
  })
})
