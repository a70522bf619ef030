/**
 * `--json` on the commands that answer without a serve: `run` prints its whole outcome, `init` what it wrote,
 * `doctor` its checks, each as one JSON document on stdout (the notes for a person, if any, stay on stderr).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runFlotta, runFlottaAll } from "./support/cli.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-json-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

describe("--json without a serve", () => {
  it("run: the whole outcome; a failure keeps its message and exit code", { timeout: 120_000 }, async () => {
    const [ran, failed] = await runFlottaAll(dir, [
      ["run", "--simulate", "--json", "--name", "once", "ECHO as data"],
      ["run", "--simulate", "--json", "ERROR 500"]
    ])
    assert.strictEqual(ran!.code, 0, ran!.stderr)
    const outcome = JSON.parse(ran!.stdout) as Record<string, unknown>
    assert.deepInclude(outcome, { kind: "run", name: "once", text: "ECHO: as data", modelCalls: 1 })
    assert.isNumber(outcome["costUsd"])
    assert.isString(outcome["sessionId"])
    assert.notInclude(ran!.stderr, "— $", "the footer's facts are in the JSON")
    assert.strictEqual(failed!.code, 5)
    assert.strictEqual(failed!.stdout, "")
    assert.match(failed!.stderr, /\nflotta: TurnFailed: /)
  })

  it("init: what it wrote; doctor: its checks", { timeout: 120_000 }, async () => {
    const project = path.join(dir, "project")
    fs.mkdirSync(project)
    fs.writeFileSync(path.join(project, ".gitignore"), "node_modules\n")
    const init = await runFlotta(project, ["init", "--json"])
    assert.strictEqual(init.code, 0, init.stderr)
    assert.strictEqual(init.stderr, "")
    assert.deepStrictEqual(JSON.parse(init.stdout), {
      config: path.join(project, "flotta.config.json"),
      gitignore: { file: path.join(project, ".gitignore"), line: ".flotta/state.db*" },
      store: path.join(project, ".flotta", "state.db")
    })
    assert.isTrue(fs.existsSync(path.join(project, "flotta.config.json")))

    const doctor = await runFlotta(project, ["doctor", "--json"])
    assert.strictEqual(doctor.code, 0, doctor.stderr)
    const report = JSON.parse(doctor.stdout) as {
      ok: boolean
      node: string
      checks: Array<{ level: string; topic: string; text: string }>
    }
    assert.isTrue(report.ok)
    assert.strictEqual(report.node, process.version)
    const topics = report.checks.map((c) => c.topic)
    for (const topic of ["config", "claude", "credentials", "store"]) assert.include(topics, topic)
    assert.deepInclude(report.checks, {
      level: "ok",
      topic: "config",
      text: `${path.join(project, "flotta.config.json")}: 3 session(s), 3 run template(s)`
    })
    assert.isTrue(report.checks.every((c) => ["ok", "warn", "fail"].includes(c.level)))
  })
})
