/**
 * `flotta init`'s starter config and its commented-out examples. Each block a person may uncomment (a line
 * `// ,"section": ...` and the comment lines after it) is taken out of the file, uncommented into it as a person
 * would (one `// ` a line) and the whole file decoded: it must load with nothing skipped, and turn on nothing that
 * writes or reaches outside the machine. The examples still commented inside a block (the opt-ins: runs of JSON
 * lines) are each uncommented on top of their block the same way, and must load too.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Permission from "@flotta/core/Permission"
import type * as Spec from "@flotta/core/Spec"
import { Either } from "effect"
import * as ConfigFile from "../src/ConfigFile.js"
import * as InitCommand from "../src/InitCommand.js"

const LINES = InitCommand.STARTER.split("\n")
const COMMENT = /^(\s*)\/\/ ?(.*)$/
/** A comment line that is JSON, not words: it starts as a value, a key or a bracket does. */
const JSON_LINE = /^\s*[{}[\],"]/

/** The lines with one `// ` taken off those at `at`. */
const uncomment = (lines: ReadonlyArray<string>, at: ReadonlyArray<number>) =>
  lines.map((line, i) => (at.includes(i) ? line.replace(/^(\s*)\/\/ ?/, "$1") : line))

/** Each commented-out block: the line `// ,"key": ...` that opens it and the comment lines that follow it. */
const blocks = (): ReadonlyArray<ReadonlyArray<number>> =>
  LINES.flatMap((line, i) => {
    const comment = COMMENT.exec(line)
    if (comment === null || !comment[2]!.startsWith(",\"")) return []
    const block: Array<number> = []
    for (let j = i; j < LINES.length && COMMENT.test(LINES[j]!); j++) block.push(j)
    return [block]
  })

/** The examples still commented inside a block once it is uncommented: each run of commented JSON lines. */
const optIns = (block: ReadonlyArray<number>): ReadonlyArray<ReadonlyArray<number>> => {
  const once = uncomment(LINES, block)
  const runs: Array<Array<number>> = []
  let run: Array<number> = []
  for (const i of block) {
    const inner = COMMENT.exec(once[i]!)
    if (inner !== null && JSON_LINE.test(inner[2]!)) {
      run.push(i)
    } else if (run.length > 0) {
      runs.push(run)
      run = []
    }
  }
  if (run.length > 0) runs.push(run)
  return runs
}

/** The file with the lines at `once` uncommented once and those at `twice` twice, decoded with nothing skipped. */
const load = (once: ReadonlyArray<number>, twice: ReadonlyArray<number> = []) => {
  const text = uncomment(uncomment(LINES, once), twice).join("\n")
  const decoded = ConfigFile.decode("/project/flotta.config.json", JSON.parse(ConfigFile.stripComments(text)))
  if (Either.isLeft(decoded)) return assert.fail(decoded.left.message)
  assert.deepStrictEqual(decoded.right.skipped.map((r) => `${r.path}: ${r.message}`), [], "entries skipped")
  return decoded.right
}

/** Whether a run template writes or reaches outside: a write permission, or hosts its sandbox lets it reach. */
const outward = (template: Spec.Spec) =>
  Permission.canWrite(template.permission) ||
  (typeof template.sandbox === "object" && (template.sandbox.network?.allow.length ?? 0) > 0)

/** What a loaded config turns on that writes or reaches outside the machine, in words (none: safe). */
const unsafe = (config: ConfigFile.LoadedConfig): ReadonlyArray<string> => {
  const templates = new Map(config.fleet.fleet.templates.map((t) => [t.name, t]))
  const template = (name: string) => templates.get(name)!
  return [
    ...(config.notify ?? []).flatMap((target) =>
      ["127.0.0.1", "localhost", "[::1]"].includes(new URL(target.url).hostname) ? [] : [`notify ${target.url}`]
    ),
    ...(config.github?.on ?? []).flatMap((m) =>
      m.run !== undefined && outward(template(m.run)) ? [`github run ${m.run}`] : []
    ),
    ...(config.schedule?.routines ?? []).flatMap((r) =>
      (r.action === "dispatch_scan" || r.action === "run") && r.template !== undefined && outward(template(r.template))
        ? [`routine ${r.name}`]
        : r.action === "run" && r.template === undefined && r.permission !== undefined &&
            Permission.canWrite(r.permission)
        ? [`routine ${r.name}`]
        : []
    )
  ]
}

describe("init's starter config", () => {
  it("loads as written with nothing skipped, and nothing scheduled, notified or triggered", () => {
    const config = load([])
    assert.deepStrictEqual(config.fleet.fleet.sessions.map((s) => s.name), ["scout", "librarian", "reviewer"])
    assert.deepStrictEqual(config.fleet.fleet.templates.map((t) => t.name), ["issue-runner", "issue-filer", "triage"])
    assert.isUndefined(config.schedule)
    assert.isUndefined(config.notify)
    assert.isUndefined(config.github)
    // The triage template, which the GitHub example fires, only reads.
    const triage = config.fleet.fleet.templates.find((t) => t.name === "triage")!
    assert.strictEqual(triage.permission, "read_only")
    assert.isFalse(outward(triage))
  })

  it("has three blocks to try, each valid alone against the rest of the file and safe to uncomment", () => {
    const found = blocks()
    assert.deepStrictEqual(found.map((block) => LINES[block[0]!]!.trim().slice(0, 14)), [
      "// ,\"notify\": ",
      "// ,\"github\": ",
      "// ,\"schedule\""
    ])
    const [notify, github, schedule] = found.map((block) => load(block))
    assert.deepStrictEqual(notify!.notify?.map((t) => t.url), ["http://127.0.0.1:8787/flotta-events"])
    assert.deepStrictEqual(github!.github?.on.map((m) => m.run), ["triage"])
    assert.deepStrictEqual(schedule!.schedule?.routines.map((r) => [r.name, r.action]), [["morning-scan", "scan"]])
    for (const config of [notify!, github!, schedule!]) assert.deepStrictEqual(unsafe(config), [])
  })

  it("keeps what writes or reaches outside as opt-ins inside a block, each valid once uncommented too", () => {
    const found = blocks()
    const opted = found.flatMap((block) => optIns(block).map((optIn) => ({ block, optIn, config: load(block, optIn) })))
    assert.deepStrictEqual(opted.map(({ config }) => unsafe(config)), [
      ["notify https://hooks.slack.com/services/T000/B000/XXXX"],
      ["github run issue-runner"],
      ["routine fix-ci"],
      ["routine find-and-file"]
    ])
    // find-and-file files real issues: it is only there once its own lines are uncommented.
    const findAndFile = opted[3]!.config.schedule?.routines.find((r) => r.name === "find-and-file")
    assert.isTrue(findAndFile?.action === "dispatch_scan" && findAndFile.template === "issue-filer")
    const fixCi = opted[2]!.config.schedule?.routines.find((r) => r.name === "fix-ci")
    assert.isTrue(fixCi !== undefined && fixCi.triggerAnyTime === true && fixCi.secret !== undefined)
    assert.deepStrictEqual(fixCi?.every, { triggered: true })

    // Everything at once: still nothing skipped, every example there.
    const all = load(found.flat(), opted.flatMap(({ optIn }) => optIn))
    assert.deepStrictEqual(all.notify?.map((t) => t.format ?? "json"), ["json", "slack"])
    assert.deepStrictEqual(all.github?.on.map((m) => m.run), ["triage", "issue-runner"])
    assert.deepStrictEqual(all.schedule?.routines.map((r) => r.name), ["morning-scan", "fix-ci", "find-and-file"])
  })
})
