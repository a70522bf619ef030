/**
 * `flotta init` as a newcomer runs it: the starter config it writes loads with nothing skipped, declares the
 * original's dev fleet (read-only scout, librarian and reviewer; the issue-runner and issue-filer run
 * templates, and a read-only triage one), and its commented-out examples, find-and-file included, are valid once
 * uncommented (packages/cli/test/InitCommand.test.ts takes them one by one).
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

/**
 * Uncomments every example, as a user would: each line of JSON below the MCP server's, whether commented once (a
 * block to try) or twice (an opt-in inside it); the words stay comments.
 */
const uncommentAll = (text: string) => {
  const lines = text.split("\n")
  const start = lines.findIndex((line) => line.includes("\"dashboard\": {}"))
  assert.isAbove(start, 0, "the starter config has a dashboard section, and its examples after it")
  return lines.map((line, i) => {
    const json = /^(\s*)(?:\/\/\s*)+([{}[\],"].*)$/.exec(line)
    return json === null || i < start ? line : `${json[1]}${json[2]}`
  }).join("\n")
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
    assert.include(doctor.stdout, `ok    config: ${file}: 3 session(s), 3 run template(s)`)
    assert.notInclude(doctor.stdout, "skipped")

    const { fleet } = load(file, text).fleet
    assert.deepStrictEqual(load(file, text).skipped, [])
    assert.deepStrictEqual(fleet.sessions.map((s) => s.name), ["scout", "librarian", "reviewer"])
    for (const session of fleet.sessions) assert.strictEqual(session.permission, "read_only", session.name)
    const librarian = fleet.sessions.find((s) => s.name === "librarian")!
    assert.strictEqual(librarian.model, "haiku")
    assert.strictEqual(librarian.appendSystemPrompt, "Index and summarize.")

    assert.deepStrictEqual(fleet.templates.map((t) => t.name), ["issue-runner", "issue-filer", "triage"])
    const filer = fleet.templates.find((t) => t.name === "issue-filer")!
    assert.strictEqual(filer.worktree, true)
    assert.deepStrictEqual(filer.permission, { allow: ["Read", "Bash"] })
    assert.isTrue(Permission.canWrite(filer.permission), "Bash can write: so the worktree is what isolates it")
    // The run templates that write are sandboxed, keeping the network gh needs; triage only reads.
    for (const template of fleet.templates.filter((t) => Permission.canWrite(t.permission))) {
      assert.deepStrictEqual(
        template.sandbox,
        { network: { allow: ["github.com", "api.github.com"] } },
        template.name
      )
    }
    assert.include(filer.appendSystemPrompt, "gh issue list")
    assert.include(filer.appendSystemPrompt, "gh issue create")
    assert.include(filer.appendSystemPrompt, "Never close, reopen, edit, comment on, label or merge")

    assert.deepStrictEqual(fleet.templates.filter((t) => Permission.canWrite(t.permission)).map((t) => t.name), [
      "issue-runner",
      "issue-filer"
    ])
    // As shipped, nothing is scheduled, notified or triggered: those examples are commented out.
    assert.isUndefined(load(file, text).schedule)
    assert.isUndefined(load(file, text).notify)
    assert.isUndefined(load(file, text).github)

    const again = await runFlotta(dir, ["init"])
    assert.strictEqual(again.code, 2)
    assert.include(again.stderr, "already exists (use --force to overwrite it)")
  })

  it("its examples are valid once uncommented, find-and-file firing the issue-filer", async () => {
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
    const text = uncommentAll(fs.readFileSync(file, "utf8"))
    fs.writeFileSync(file, text)

    const config = load(file, text)
    assert.deepStrictEqual(config.skipped, [])
    const scheduler = config.schedule
    if (scheduler === undefined) return assert.fail("the uncommented scheduler was not read")
    assert.deepStrictEqual(scheduler.routines.map((r) => r.name), ["morning-scan", "fix-ci", "find-and-file"])
    const findAndFile = scheduler.routines[2]!
    assert.strictEqual(findAndFile.action, "dispatch_scan")
    assert.strictEqual(findAndFile.action === "dispatch_scan" ? findAndFile.template : undefined, "issue-filer")
    assert.deepStrictEqual(config.github?.on.map((m) => m.run), ["triage", "issue-runner"])

    const doctor = await runFlotta(project, ["doctor"])
    assert.include(doctor.stdout, `ok    config: ${file}: 3 session(s), 3 run template(s)`)
    assert.notInclude(doctor.stdout, "skipped")
  })
})
