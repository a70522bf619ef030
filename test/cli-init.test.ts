/**
 * `flotta init` as a newcomer runs it: the starter config it writes loads with nothing skipped, declares the
 * original's dev fleet (read-only scout, librarian and reviewer; the issue-runner and issue-filer run
 * templates), and its commented-out scheduler, find-and-file routine included, is valid once uncommented.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as ConfigFile from "@flotta/cli/ConfigFile"
import * as Permission from "@flotta/core/Permission"
import { Either } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runFlotta } from "./support/cli.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-init-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

/** The config as `flotta` reads it. */
const load = (file: string, text: string) => {
  const loaded = ConfigFile.decode(file, JSON.parse(ConfigFile.stripComments(text)))
  if (Either.isLeft(loaded)) return assert.fail(loaded.left.message)
  return loaded.right
}

/** Uncomments the commented-out block at the end (from "Uncomment to try" on), as a user would: one `//` a line. */
const uncommentScheduler = (text: string) => {
  const lines = text.split("\n")
  const start = lines.findIndex((line) => line.includes("Uncomment to try"))
  assert.isAbove(start, 0, "the starter config has a commented-out scheduler")
  return lines.map((line, i) => (i > start ? line.replace(/^(\s*)\/\/ ?/, "$1") : line)).join("\n")
}

describe("flotta init", () => {
  it("writes a config that loads with nothing skipped: the dev fleet and its run templates", async () => {
    const ran = await runFlotta(dir, ["init"])
    assert.strictEqual(ran.code, 0, ran.stderr)
    const file = path.join(dir, "flotta.config.json")
    const text = fs.readFileSync(file, "utf8")
    // The store is the default one; a project without a .gitignore is not given one.
    assert.deepStrictEqual(load(file, text).store, { config: { sqlite: path.join(dir, ".flotta", "state.db") } })
    assert.isFalse(fs.existsSync(path.join(dir, ".gitignore")))
    assert.include(ran.stderr, "keep it out of version control")

    const doctor = await runFlotta(dir, ["doctor"])
    assert.include(doctor.stdout, `config: ${file}: 3 session(s), 2 run template(s)`)
    assert.notInclude(doctor.stdout, "skipped")

    const { fleet } = load(file, text).fleet
    assert.deepStrictEqual(fleet.rejected, [])
    assert.deepStrictEqual(fleet.sessions.map((s) => s.name), ["scout", "librarian", "reviewer"])
    for (const session of fleet.sessions) assert.strictEqual(session.permission, "read_only", session.name)
    const librarian = fleet.sessions.find((s) => s.name === "librarian")!
    assert.strictEqual(librarian.model, "haiku")
    assert.strictEqual(librarian.appendSystemPrompt, "Index and summarize.")

    assert.deepStrictEqual(fleet.templates.map((t) => t.name), ["issue-runner", "issue-filer"])
    const filer = fleet.templates.find((t) => t.name === "issue-filer")!
    assert.strictEqual(filer.worktree, true)
    assert.deepStrictEqual(filer.permission, { allow: ["Read", "Bash"] })
    assert.isTrue(Permission.canWrite(filer.permission), "Bash can write: so the worktree is what isolates it")
    // Both run templates are sandboxed, keeping the network gh needs.
    for (const template of fleet.templates) {
      assert.deepStrictEqual(
        template.sandbox,
        { network: { allow: ["github.com", "api.github.com"] } },
        template.name
      )
    }
    assert.include(filer.appendSystemPrompt, "gh issue list")
    assert.include(filer.appendSystemPrompt, "gh issue create")
    assert.include(filer.appendSystemPrompt, "Never close, reopen, edit, comment on, label or merge")

    // As shipped, nothing is scheduled: the find-and-file routine is commented out.
    assert.isUndefined(load(file, text).schedule)

    const again = await runFlotta(dir, ["init"])
    assert.strictEqual(again.code, 2)
    assert.include(again.stderr, "already exists (use --force to overwrite it)")
  })

  it("its commented-out scheduler is valid once uncommented, find-and-file firing the issue-filer", async () => {
    const project = path.join(dir, "uncommented")
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, ".gitignore"), "node_modules")
    assert.strictEqual((await runFlotta(project, ["init"])).code, 0)
    // An existing .gitignore gets the store's files (only them: .flotta/config.json may be committed).
    assert.strictEqual(
      fs.readFileSync(path.join(project, ".gitignore"), "utf8"),
      "node_modules\n# flotta's state (flotta serve, flotta repl)\n.flotta/state.db*\n"
    )
    const file = path.join(project, "flotta.config.json")
    const text = uncommentScheduler(fs.readFileSync(file, "utf8"))
    fs.writeFileSync(file, text)

    const config = load(file, text)
    assert.deepStrictEqual(config.fleet.fleet.rejected, [])
    const scheduler = config.schedule
    if (scheduler === undefined) return assert.fail("the uncommented scheduler was not read")
    const { rejected, routines } = scheduler
    assert.deepStrictEqual(rejected, [])
    assert.deepStrictEqual(routines.map((r) => r.name), ["morning-scan", "find-and-file"])
    const findAndFile = routines[1]!
    assert.strictEqual(findAndFile.action, "dispatch_scan")
    assert.strictEqual(findAndFile.action === "dispatch_scan" ? findAndFile.template : undefined, "issue-filer")
    assert.include(config.fleet.fleet.templates.map((t) => t.name), "issue-filer")

    const doctor = await runFlotta(project, ["doctor"])
    assert.include(doctor.stdout, `config: ${file}: 3 session(s), 2 run template(s)`)
    assert.notInclude(doctor.stdout, "skipped")
  })
})
