/**
 * Human approvals over the in-memory Claude, under TestClock: a tool call in `ask` waits for a decision (allow,
 * deny with a message the model sees, "always"), expires at `approvalTimeout`, ends when its turn does, and
 * shows as expired after a host restart. Waiting for a human stops the turn's clock.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Fiber, Schema, Scope, Stream, TestClock } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type * as Agent from "../src/Agent.js"
import { Flotta } from "../src/Flotta.js"
import * as Permission from "../src/Permission.js"
import * as SqliteStore from "../src/SqliteStore.js"
import * as StoreConfig from "../src/StoreConfig.js"
import { eventually, failureOf, memoryFleet, withAgents } from "./support.js"

const write = (file: string) => `tool Write ${JSON.stringify({ file_path: file, content: "hi" })}`
const guarded = { allow: ["Read"], ask: ["Write"] } as const

/** The first pending approval of `agent`, once there is one. */
const pendingOf = (fleet: Flotta, agent: string) =>
  eventually(fleet.approvals({ agent }), (list) => list.length > 0).pipe(Effect.map((list) => list[0]!))

/** Spawns "w" with `options`, has it write `file` and waits for the approval that asks about it. */
const awaitingApproval = (fleet: Flotta, options: Agent.AgentOptions, file: string) =>
  Effect.gen(function*() {
    yield* fleet.spawn("w", options)
    const turnId = yield* fleet.prompt("w", write(file))
    return { turnId, approval: yield* pendingOf(fleet, "w") }
  })

describe("permission forms that ask a human", () => {
  it("flags: ask tools are offered but need a prompt; \"ask\" offers every tool and allows the read-only ones", () => {
    assert.deepStrictEqual(Permission.flags({ allow: ["Read"], ask: ["Write", "Bash(git *)"] }), [
      "--tools",
      "Read,Write,Bash",
      "--allowedTools",
      "Read"
    ])
    assert.deepStrictEqual(Permission.flags("ask"), ["--allowedTools", "Read,Glob,Grep"])
    assert.isFalse(Permission.canWrite("ask"))
    assert.isFalse(Permission.canWrite({ allow: ["Read"], ask: ["Write", "Bash"] }))
    assert.isTrue(Permission.canWrite({ allow: ["Edit"], ask: ["Bash"] }))
  })

  it.effect("answers: allowed, asked, or denied as before", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* Permission.answer("ask", "Read", {})).behavior, "allow")
      assert.strictEqual((yield* Permission.answer("ask", "Bash", {})).behavior, "ask")
      assert.strictEqual((yield* Permission.answer(guarded, "Write", {})).behavior, "ask")
      assert.strictEqual((yield* Permission.answer(guarded, "Read", {})).behavior, "allow")
      assert.match(JSON.stringify(yield* Permission.answer(guarded, "Bash", {})), /allow list \(Read\)/)
    }))

  it("config: the new forms decode, and a tool cannot be both allowed and asked about", () => {
    const decode = Schema.decodeUnknownEither(Permission.PermissionData)
    assert.isTrue(Either.isRight(decode("ask")))
    assert.isTrue(Either.isRight(decode({ allow: ["Read"], ask: ["Write"] })))
    const both = decode({ allow: ["Read", "Write"], ask: ["Write"] })
    assert.isTrue(Either.isLeft(both))
    assert.match(String(Either.isLeft(both) ? both.left.message : ""), /Write cannot be both in allow and in ask/)
  })

  it("allowAlso moves a tool from ask to allow, and turns \"ask\" into data", () => {
    assert.deepStrictEqual(Permission.allowAlso(guarded, ["Write"]), { allow: ["Read", "Write"] })
    assert.deepStrictEqual(Permission.allowAlso("ask", ["Bash"]), {
      allow: ["Read", "Glob", "Grep", "Bash"],
      ask: ["*"]
    })
    assert.deepStrictEqual(Permission.allowAlso("full", ["Bash"]), "full")
  })

  it.effect("allowAlso on a function allows the tool first and asks the function about the rest", () =>
    Effect.gen(function*() {
      const policy = Permission.allowAlso(() => ({ behavior: "ask" }), ["Write"])
      assert.strictEqual((yield* Permission.answer(policy, "Write", {})).behavior, "allow")
      assert.strictEqual((yield* Permission.answer(policy, "Bash", {})).behavior, "ask")
    }))
})

describe("a pending approval", () => {
  it.effect("waits for a human: waiting_approval, listed, reported; allowed, the tool runs", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const { approval, turnId } = yield* awaitingApproval(fleet, { permission: guarded }, "out.txt")
      assert.deepInclude(approval, { agent: "w", turnId, tool: "Write", status: "pending" })
      assert.deepStrictEqual(approval.input, { file_path: "out.txt", content: "hi" })
      assert.strictEqual(Date.parse(approval.expiresAt) - Date.parse(approval.requestedAt), 15 * 60_000)
      assert.strictEqual((yield* fleet.status("w")).status, "waiting_approval")
      const decided = yield* fleet.decide(approval.id, { behavior: "allow", by: "cli" })
      assert.deepInclude(decided, { status: "allowed", decidedBy: "cli" })
      const result = yield* fleet.wait("w", turnId)
      assert.match(result.text, /^allowed Write/)
      assert.strictEqual((yield* fleet.status("w")).status, "idle")
      assert.deepStrictEqual(yield* fleet.approvals(), [])
      const [record] = yield* fleet.transcript("w")
      assert.deepInclude(record!.permissions[0]!, { tool: "Write", decision: "allow", by: "cli" })
      const kinds = (yield* fleet.reports({ agent: "w" })).entries.map((e) => e.kind)
      assert.includeMembers(kinds, ["approval_requested", "approval_decided", "permission"])
      const decidedEntry = (yield* fleet.reports({ kinds: ["approval_decided"] })).entries[0]!
      assert.deepInclude(decidedEntry.data as object, { id: approval.id, behavior: "allow", by: "cli" })
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("denied with a message: the model sees it, and the tool does not run", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const { approval, turnId } = yield* awaitingApproval(fleet, { permission: "ask" }, "no.txt")
      yield* fleet.decide(approval.id, { behavior: "deny", message: "not on a Friday" })
      const result = yield* fleet.wait("w", turnId)
      assert.match(result.text, /^denied Write: .*not on a Friday/)
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("updatedInput replaces what the tool runs with", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const { approval, turnId } = yield* awaitingApproval(fleet, { permission: guarded }, "a.txt")
      yield* fleet.decide(approval.id, { behavior: "allow", updatedInput: { file_path: "b.txt", content: "x" } })
      assert.include((yield* fleet.wait("w", turnId)).text, "b.txt")
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("expires after approvalTimeout as a deny; a late or unknown decision is a typed error", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const { approval, turnId } = yield* awaitingApproval(
        fleet,
        { permission: guarded, timeout: "1 minute" },
        "late.txt"
      )
      // Waiting for a human stops the turn's clock: its one-minute timeout does not fire in five.
      yield* TestClock.adjust("5 minutes")
      assert.strictEqual((yield* fleet.status("w")).status, "waiting_approval")
      yield* TestClock.adjust("5 minutes")
      const result = yield* fleet.wait("w", turnId)
      assert.match(result.text, /^denied Write: Nobody approved this Write call in time \(no decision within 10m/)
      assert.strictEqual((yield* fleet.status("w")).status, "idle")
      const late = failureOf(yield* Effect.exit(fleet.decide(approval.id, { behavior: "allow" })))
      assert.strictEqual(late._tag, "ApprovalExpired")
      assert.match(late.message, /no longer pending: it expired/)
      const unknown = failureOf(yield* Effect.exit(fleet.decide("ap_nope", { behavior: "allow" })))
      assert.strictEqual(unknown._tag, "ApprovalNotFound")
      const bad = failureOf(yield* Effect.exit(fleet.decide(approval.id, { behavior: "maybe" } as never)))
      assert.strictEqual(bad._tag, "InvalidSpec")
      const posing = failureOf(yield* Effect.exit(fleet.decide(approval.id, { behavior: "allow", by: "timeout" })))
      assert.match(posing.message, /"timeout" names how an approval ends without a decision/)
      const [ended] = yield* fleet.approvals({ all: true })
      assert.deepInclude(ended!, { id: approval.id, status: "expired", decidedBy: "timeout" })
    }).pipe(Effect.provide(memoryFleet({ approvalTimeout: "10 minutes" }))))

  it.effect("a second decision on the same approval is ApprovalExpired, naming who decided", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const { approval } = yield* awaitingApproval(fleet, { permission: guarded }, "x")
      yield* fleet.decide(approval.id, { behavior: "deny", by: "mcp" })
      const again = failureOf(yield* Effect.exit(fleet.decide(approval.id, { behavior: "allow" })))
      assert.match(again.message, /it was denied already, by mcp/)
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("interrupt and close end it as expired; the turn ends as they say", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents(["a", "b"], { permission: guarded })
      const ta = yield* fleet.prompt("a", write("x"))
      yield* fleet.prompt("b", write("y"))
      const first = yield* pendingOf(fleet, "a")
      yield* pendingOf(fleet, "b")
      assert.isTrue(yield* fleet.interrupt("a"))
      assert.strictEqual(failureOf(yield* Effect.exit(fleet.wait("a", ta)))._tag, "TurnInterrupted")
      yield* fleet.close("b")
      const ended = yield* fleet.approvals({ all: true })
      assert.deepStrictEqual(ended.map((a) => [a.agent, a.status, a.decidedBy]).sort(), [
        ["a", "expired", "interrupted"],
        ["b", "expired", "closed"]
      ])
      const late = failureOf(yield* Effect.exit(fleet.decide(first.id, { behavior: "allow" })))
      assert.strictEqual(late._tag, "ApprovalExpired")
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("always: the tool is allowed for the rest of the agent's life, and that is recorded", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const { approval, turnId: t1 } = yield* awaitingApproval(fleet, { permission: guarded }, "1")
      yield* fleet.decide(approval.id, { behavior: "allow", always: true })
      yield* fleet.wait("w", t1)
      const t2 = yield* fleet.prompt("w", write("2"))
      assert.match((yield* fleet.wait("w", t2)).text, /^allowed Write/)
      assert.strictEqual((yield* fleet.approvals({ all: true })).length, 1)
      assert.deepStrictEqual((yield* fleet.info("w")).permission, { allow: ["Read", "Write"] })
      const changed = (yield* fleet.reports({ kinds: ["permission_changed"] })).entries
      assert.deepInclude(changed[0]!.data as object, { allowAlso: "Write", by: "api" })
    }).pipe(Effect.provide(memoryFleet())))

  it.effect("a live subscription gets each new approval", () =>
    Effect.gen(function*() {
      const fleet = yield* Flotta
      const scope = yield* Scope.make()
      const stream = yield* Scope.extend(fleet.subscribeApprovals, scope)
      const seen = yield* Effect.fork(Stream.runCollect(Stream.take(stream, 2)))
      yield* fleet.spawn("w", { permission: "ask" })
      yield* fleet.prompt("w", "tool Bash {\"command\":\"ls\"}")
      yield* fleet.prompt("w", write("z"))
      const first = yield* pendingOf(fleet, "w")
      yield* fleet.decide(first.id, { behavior: "allow" })
      const second = yield* eventually(fleet.approvals(), (l) => l.length > 0 && l[0]!.id !== first.id)
      yield* fleet.decide(second[0]!.id, { behavior: "allow" })
      const got = [...(yield* Fiber.join(seen))]
      assert.deepStrictEqual(got.map((a) => a.tool), ["Bash", "Write"])
    }).pipe(Effect.provide(memoryFleet())))
})

describe("after a host restart", () => {
  it.effect("an approval the earlier host left pending shows as expired, and cannot be decided", () =>
    Effect.gen(function*() {
      const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-approvals-")), "state.db")
      // The earlier host died (kill -9) while an approval was pending: that is what its store holds.
      const pending = {
        id: "ap_left",
        agent: "w",
        turnId: "t1",
        tool: "Write",
        input: { file_path: "x" },
        requestedAt: "2026-12-01T10:00:00.000Z",
        expiresAt: "2026-12-01T10:15:00.000Z",
        status: "pending",
        decidedAt: null,
        decidedBy: null,
        message: null
      }
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* StoreConfig.open({ sqlite: file })
        store.saveState("approvals", { pending: [pending], ended: [] })
        yield* store.flush(5000)
      }))
      yield* Effect.gen(function*() {
        const fleet = yield* Flotta
        assert.deepStrictEqual(yield* fleet.approvals(), [])
        const [ended] = yield* fleet.approvals({ all: true })
        assert.deepInclude(ended!, { id: "ap_left", status: "expired", decidedBy: "host_restart" })
        const late = failureOf(yield* Effect.exit(fleet.decide("ap_left", { behavior: "allow" })))
        assert.strictEqual(late._tag, "ApprovalExpired")
        const reported = (yield* fleet.reports({ kinds: ["approval_decided"] })).entries
        assert.deepInclude(reported[0]!.data as object, { id: "ap_left", by: "host_restart", status: "expired" })
      }).pipe(Effect.provide(memoryFleet({ store: SqliteStore.layer(file) })))
    }))
})
