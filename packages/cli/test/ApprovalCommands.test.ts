/**
 * What the approval commands show a person (the table, a decision, the question at the terminal, the answers
 * they take), and the permission `flotta run` builds from `--permission`, `--allow` and `--ask`. (Against a
 * running serve and on a pseudo-terminal: test/approvals-real-cli.test.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import type { Approval } from "@flotta/core/Approvals"
import { Effect, Either, Option } from "effect"
import * as ApprovalCommands from "../src/ApprovalCommands.js"
import * as PermissionFlags from "../src/PermissionFlags.js"
import * as RunCommand from "../src/RunCommand.js"

const NOW = Date.parse("2026-03-02T10:00:00.000Z")

const approval = (overrides: Partial<Approval> = {}): Approval => ({
  id: "ap_k3j9x2ab",
  agent: "scribe",
  turnId: "t3",
  tool: "Write",
  input: { file_path: "/srv/project/docs/notes.md", content: "The harbour is Genoa.\nIt has a lighthouse.\n" },
  requestedAt: "2026-03-02T09:50:00.000Z",
  expiresAt: "2026-03-02T10:04:30.000Z",
  status: "pending",
  decidedAt: null,
  decidedBy: null,
  message: null,
  ...overrides
})

describe("the approval views", () => {
  it("an input on one line: the path or command whole, other long values cut, the line cut at its limit", () => {
    assert.strictEqual(
      ApprovalCommands.describeInput(approval().input, 200),
      "{file_path: \"/srv/project/docs/notes.md\", content: \"The harbour is Genoa.\\nIt has a lighthou…\"}"
    )
    assert.strictEqual(
      ApprovalCommands.describeInput({ command: "git push --force origin main", timeout: 30 }),
      "{command: \"git push --force origin main\", timeout: 30}"
    )
    const short = ApprovalCommands.describeInput(approval().input, 30)
    assert.strictEqual(short, "{file_path: \"/srv/project/doc…")
    assert.strictEqual(short.length, 30)
    assert.strictEqual(ApprovalCommands.describeInput({}), "{}")
  })

  it("time left: seconds, minutes and seconds, hours and minutes; due now once passed", () => {
    const at = (ms: number) => new Date(NOW + ms).toISOString()
    assert.strictEqual(ApprovalCommands.timeLeft(at(42_500), NOW), "42s")
    assert.strictEqual(ApprovalCommands.timeLeft(at(14 * 60_000 + 58_000), NOW), "14m 58s")
    assert.strictEqual(ApprovalCommands.timeLeft(at(2 * 3_600_000 + 5 * 60_000), NOW), "2h 5m")
    assert.strictEqual(ApprovalCommands.timeLeft(at(-1000), NOW), "due now")
  })

  it("the table: a header and one aligned row per approval; with --all, how the ended ones ended", () => {
    assert.strictEqual(ApprovalCommands.renderApprovals([], NOW), "no approvals pending")
    const bash = approval({ id: "ap_second1", agent: "ops", tool: "Bash", input: { command: "make deploy" } })
    const table = ApprovalCommands.renderApprovals([approval(), bash], NOW).split("\n")
    assert.deepStrictEqual(table, [
      "ID           AGENT   TOOL   INPUT                                                         LEFT",
      "ap_k3j9x2ab  scribe  Write  {file_path: \"/srv/project/docs/notes.md\", content: \"The har…  4m 30s left",
      "ap_second1   ops     Bash   {command: \"make deploy\"}                                      4m 30s left"
    ])
    const ended = [
      approval({ status: "denied", decidedBy: "cli" }),
      approval({ id: "ap_timedout", status: "expired", decidedBy: "timeout" })
    ]
    const all = ApprovalCommands.renderApprovals(ended, NOW, true).split("\n")
    assert.match(all[0]!, /LEFT \/ ENDED$/)
    assert.match(all[1]!, /denied by cli$/)
    assert.match(all[2]!, /expired \(timeout\)$/)
  })

  it("a decision: what was decided, the note, and what --always changed", () => {
    assert.strictEqual(
      ApprovalCommands.renderDecided(approval({ status: "denied", message: "not that file" }), false),
      "denied ap_k3j9x2ab: Write {file_path: \"/srv/project/docs/notes.md\", content: \"The harbour is " +
        "Genoa.\\nIt has a lighthou…\"} for scribe (not that file)"
    )
    assert.match(
      ApprovalCommands.renderDecided(approval({ status: "allowed" }), true),
      /^allowed ap_k3j9x2ab: .*\nWrite is allowed for scribe from now on$/
    )
  })

  it("the question at the terminal, and the answers it takes", () => {
    assert.strictEqual(
      ApprovalCommands.question(approval({ input: { file_path: "/tmp/a.txt", content: "hi\n" } })),
      "Allow Write {file_path: \"/tmp/a.txt\", content: \"hi\\n\"}? [y]es / [n]o / [a]lways "
    )
    assert.deepStrictEqual(
      ["y", "YES", " n ", "no", "a", "Always", "", "maybe"].map(ApprovalCommands.parseAnswer),
      ["allow", "allow", "deny", "deny", "always", "always", undefined, undefined]
    )
  })
})

describe("flotta run's permission flags", () => {
  const permission = (p: "read_only" | "full" | "ask" | undefined, allow: Array<string>, ask: Array<string>) =>
    Effect.runSync(Effect.either(PermissionFlags.permissionOf(Option.fromNullable(p), allow, ask)))
  const refused = (result: ReturnType<typeof permission>) => {
    assert.isTrue(Either.isLeft(result), "expected a usage error")
    return Either.isLeft(result) ? result.left.message : ""
  }

  it("--ask alone asks about those tools and allows the read-only ones; with --allow, those instead", () => {
    assert.deepStrictEqual(
      permission(undefined, [], ["Write", "Bash"]),
      Either.right({
        allow: ["Read", "Glob", "Grep"],
        ask: ["Write", "Bash"]
      })
    )
    assert.deepStrictEqual(
      permission(undefined, ["Read,Edit"], ["Write,Bash(git *)"]),
      Either.right({
        allow: ["Read", "Edit"],
        ask: ["Write", "Bash(git *)"]
      })
    )
    assert.deepStrictEqual(
      permission("read_only", [], ["Write"]),
      Either.right({
        allow: ["Read", "Glob", "Grep"],
        ask: ["Write"]
      })
    )
    assert.deepStrictEqual(permission("ask", [], []), Either.right("ask"))
    assert.deepStrictEqual(permission(undefined, ["Edit"], []), Either.right({ allow: ["Edit"] }))
    assert.deepStrictEqual(permission(undefined, [], []), Either.right("read_only"))
    assert.isTrue(RunCommand.asksHuman("ask"))
    assert.isTrue(RunCommand.asksHuman({ allow: [], ask: ["Write"] }))
    assert.isFalse(RunCommand.asksHuman({ allow: ["Write"] }))
    assert.isFalse(RunCommand.asksHuman("full"))
  })

  it("refuses what contradicts itself, naming the flag", () => {
    assert.match(refused(permission("full", [], ["Write"])), /^--ask: --permission full allows every tool/)
    assert.match(refused(permission("ask", [], ["Write"])), /^--ask: --permission ask asks about every tool/)
    assert.match(refused(permission(undefined, ["Write"], ["Write"])), /^--ask: Write cannot be both allowed and/)
    assert.match(refused(permission(undefined, [], [" , "])), /^--ask: " , " names no tool/)
    assert.match(refused(permission("full", ["Read"], [])), /^--allow: give either --permission or --allow/)
  })
})
