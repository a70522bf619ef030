/**
 * The pages' data: agents and async runs (live, finished, gone), the report filter and its one-line summaries,
 * and a run's worktree read from its working directory.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Testing from "@flotta/core/Testing"
import { Effect } from "effect"
import * as path from "node:path"
import { withAgents } from "../../core/test/support.js"
import * as Views from "../src/Views.js"

const fleet = Testing.layer({
  model: ({ prompt }) => (prompt === "hang" ? Testing.hang() : prompt === "fail" ? Testing.apiError(500) : `ok`)
})

describe("views", () => {
  it.effect("agents: every live agent and run in progress, by name, with its turn's start", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents(["zeta", "alpha"])
      yield* fleet.prompt("zeta", "hang")
      const run = yield* fleet.runAsync({ name: "job", prompt: "hang" })
      const rows = yield* Effect.iterate([] as ReadonlyArray<Views.AgentRow>, {
        while: (rows) => rows.length < 3 || rows.some((r) => r.info.name !== "alpha" && r.currentStartedAt === null),
        body: () => Effect.zipRight(Effect.yieldNow(), Views.agents)
      })
      assert.deepStrictEqual(rows.map((r) => r.info.name), ["alpha", run, "zeta"])
      assert.deepStrictEqual(rows.map((r) => r.info.lifecycle), ["session", "run", "session"])
      assert.isNull(rows[0]!.currentStartedAt)
      assert.strictEqual(rows[2]!.currentStartedAt, "1970-01-01T00:00:00.000Z")
      assert.isNull(rows[1]!.worktree) // a run without a worktree
    }).pipe(Effect.provide(fleet)))

  it.effect("agent: live with its transcript; closed, from the store, with a run's outcome; finished; else gone", () =>
    Effect.gen(function*() {
      const fleet = yield* withAgents("alpha")
      yield* fleet.ask("alpha", "hi")
      const live = yield* Views.agent("alpha")
      assert.strictEqual(live._tag, "Live")
      if (live._tag === "Live") assert.deepStrictEqual(live.transcript.map((t) => [t.prompt, t.reply]), [["hi", "ok"]])

      // An async run's agent closes when it ends: read back from the store, with the run's outcome.
      const ok = yield* fleet.runAsync({ name: "done", prompt: "go" })
      yield* fleet.awaitRun(ok)
      const done = yield* Views.agent("done")
      assert.strictEqual(done._tag, "Closed")
      if (done._tag === "Closed") {
        assert.strictEqual(done.info.status, "closed")
        assert.deepInclude(done.run!.result!, { kind: "run", text: "ok" })
        assert.deepStrictEqual(done.transcript.map((t) => t.prompt), ["go"])
      }
      const bad = yield* fleet.runAsync({ name: "broken", prompt: "fail" })
      yield* Effect.either(fleet.awaitRun(bad))
      const broken = yield* Views.agent("broken")
      assert.strictEqual(broken._tag === "Closed" ? broken.run?.error?._tag : broken._tag, "TurnFailed")

      // A best-of-N run has no agent of its own name (its attempts do): its outcome, kept by name.
      yield* fleet.awaitRun(
        yield* fleet.runAsync({ name: "best", prompt: "try", attempts: 2, verify: { checks: ["npm test"] } })
      )
      const best = yield* Views.agent("best")
      assert.strictEqual(best._tag, "Finished")
      if (best._tag === "Finished") assert.strictEqual(best.result?.kind === "run" ? best.result.attempt : 0, 2)

      yield* fleet.close("alpha")
      const closed = yield* Views.agent("alpha")
      assert.strictEqual(closed._tag, "Closed")
      if (closed._tag === "Closed") {
        assert.deepInclude(closed.info, { status: "closed", closedReason: "closed by request" })
        assert.isNull(closed.run)
        assert.deepStrictEqual(closed.transcript.map((t) => t.reply), ["ok"])
      }

      assert.deepStrictEqual(yield* Views.agent("nobody"), { _tag: "Gone", name: "nobody", last: null })
      // A verify that ran while the caller waited has no agent and keeps no outcome: only the report log knows it.
      yield* fleet.verify("/repo", { name: "checked", branch: "main", checks: ["npm test"] })
      const gone = yield* Views.agent("checked")
      assert.strictEqual(gone._tag === "Gone" ? gone.last?.kind : gone._tag, "closed")
    }).pipe(Effect.provide(Testing.layer({
      model: ({ prompt }) => (prompt === "fail" ? Testing.apiError(500) : "ok"),
      git: Testing.git({ check: ({ env }) => (env["FLOTTA_ATTEMPT"] === "2" ? 0 : 1) })
    }))))

  it.effect("schedule: none without a scheduler", () =>
    Effect.map(Views.schedule, (view) => assert.strictEqual(view._tag, "None")))

  it("reportFilter: agent trimmed, kind repeated or listed with commas and spaces", () => {
    assert.deepStrictEqual(
      Views.reportFilter(new URLSearchParams("agent=+a+&kind=result,error&kind=closed++spawned")),
      {
        agent: "a",
        kinds: ["result", "error", "closed", "spawned"]
      }
    )
    assert.deepStrictEqual(Views.reportFilter(new URLSearchParams("agent=&kind=")), { agent: undefined, kinds: [] })
  })

  it("summary: each kind's own line (reply and cost, prompt, error, reason, scheduler action, spawn, tool and verdict)", () => {
    const s = (kind: string, data: unknown) =>
      Views.summary({ seq: 1, at: "2026-01-01T00:00:00.000Z", agent: "a", kind, data })
    assert.strictEqual(s("result", { text: "hello", costUsd: 0.0123, durationMs: 5, modelCalls: 1 }), "hello ($0.0123)")
    assert.strictEqual(s("turn_started", { prompt: "do it" }), "do it")
    assert.strictEqual(s("error", { error: { _tag: "TurnTimeout", message: "too slow" } }), "TurnTimeout: too slow")
    assert.strictEqual(s("closed", { reason: "closed by request" }), "closed by request")
    assert.strictEqual(s("permission", { tool: "Write", decision: "deny", input: {} }), "Write: deny")
    assert.strictEqual(
      s("approval_decided", { id: "ap_1", tool: "Write", behavior: "allow", status: "allowed", by: "api" }),
      "Write: allowed"
    )
    assert.strictEqual(s("tool_call", { id: "t1", tool: "Write", input: {} }), "Write")
    assert.strictEqual(
      s("fire_result", {
        fireId: "f-1",
        routine: "survey",
        action: "scan",
        trigger: "schedule",
        startedAt: "2026-01-01T00:00:00.000Z",
        finishedAt: "2026-01-01T00:01:00.000Z",
        ok: true,
        costUsd: 0.5,
        runs: [],
        day: "2026-01-01"
      }),
      "survey scan ok ($0.5000)"
    )
    assert.strictEqual(s("override", { action: "pause", phase: "start" }), "pause start")
    assert.strictEqual(
      s("spawned", {
        pid: null,
        sessionId: "s",
        cwd: "/w",
        model: null,
        permission: "full",
        role: "member",
        lifecycle: "session"
      }),
      "session in /w"
    )
    assert.strictEqual(s("assistant_text", { text: "x".repeat(300) }).length, 201)
  })

  it("summary: a kind it does not know (a newer host's), or a known kind whose data does not fit, is shown raw", () => {
    const s = (kind: string, data: unknown) =>
      Views.summary({ seq: 1, at: "2026-01-01T00:00:00.000Z", agent: "a", kind, data })
    assert.strictEqual(s("teleported", { to: "mars" }), "{\"to\":\"mars\"}")
    assert.strictEqual(s("spawned", { pid: 12 }), "{\"pid\":12}")
    assert.strictEqual(s("result", "x".repeat(300)).length, 201)
    assert.strictEqual(s("closed", null), "null")
  })

  it("worktreeOf: the worktree a run's directory is in, if any", () => {
    const tree = path.join("/repo", ".claude", "worktrees", "fix-1")
    assert.strictEqual(Views.worktreeOf(tree), tree)
    assert.strictEqual(Views.worktreeOf(path.join(tree, "packages", "core")), tree)
    assert.isNull(Views.worktreeOf("/repo/packages/core"))
  })
})
