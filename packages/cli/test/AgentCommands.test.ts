/**
 * The agent commands' pure parts: how an agent, an interrupt and a broadcast read for a person, and how `spawn`'s
 * flags become the spawn tool's arguments (no process, no serve).
 */
import { assert, describe, it } from "@effect/vitest"
import type { AgentInfo } from "@flotta/core/Agent"
import { Duration, Effect, Option } from "effect"
import * as path from "node:path"
import * as AgentCommands from "../src/AgentCommands.js"

const info: AgentInfo = {
  name: "scout",
  lifecycle: "session",
  status: "working",
  pid: 4242,
  sessionId: "s-1",
  alive: true,
  cwd: "/p",
  model: "sonnet",
  permission: { allow: ["Read", "Edit"], ask: ["Bash"] },
  role: "member",
  current: "t3",
  queued: 2,
  totals: { turns: 2, failed: 1, costUsd: 0.0123 },
  restarts: 0,
  startedAt: "2026-12-03T08:00:00.000Z",
  closedReason: null,
  parkedUntil: null
}

const none = {
  cwd: Option.none(),
  model: Option.none(),
  permission: Option.none(),
  allow: [] as Array<string>,
  ask: [] as Array<string>,
  systemPrompt: Option.none(),
  appendSystemPrompt: Option.none(),
  timeout: Option.none(),
  env: [] as Array<string>,
  label: [] as Array<string>,
  role: Option.none(),
  resume: Option.none(),
  host: Option.none(),
  autoCompactAt: Option.none(),
  maxBudgetUsd: Option.none(),
  budgetPer: Option.none(),
  stream: false,
  sandbox: false,
  sandboxAllowHost: [] as Array<string>,
  sandboxWritable: [] as Array<string>
}

describe("agent views", () => {
  it("an agent's details, one per line", () => {
    assert.strictEqual(
      AgentCommands.renderInfo(info),
      [
        "scout: working",
        "  process:    pid 4242",
        "  session:    s-1",
        "  cwd:        /p",
        "  model:      sonnet",
        "  permission: allow Read, Edit; ask Bash",
        "  role:       member",
        "  turns:      2 finished (1 failed), 2 queued, t3 in flight",
        "  cost:       $0.0123",
        "  restarts:   0",
        "  started:    2026-12-03 08:00:00 UTC"
      ].join("\n")
    )
    const closed = AgentCommands.renderInfo({
      ...info,
      lifecycle: "run",
      status: "closed",
      pid: null,
      model: null,
      current: null,
      host: "node-a",
      closedReason: "the run ended"
    })
    assert.match(closed, /^scout: closed \(a run\)\n {2}process: {4}none\n/)
    assert.include(closed, "\n  model:      the CLI's default\n")
    assert.match(closed, /\n {2}host: {7}node-a\n {2}closed: {5}the run ended$/)
    // Read back from the store, it says when it closed.
    assert.match(
      AgentCommands.renderInfo({
        ...info,
        status: "closed",
        closedReason: "by request",
        closedAt: "2026-12-03T09:30:00.000Z"
      }),
      /\n {2}closed: {5}2026-12-03 09:30:00 UTC \(by request\)$/
    )
    const full = AgentCommands.renderInfo({
      ...info,
      context: { tokens: 4427, window: 200_000, percent: 2.2 },
      sessionWritesLost: { errorCode: "ENOSPC", lost: ["transcript"], sessionIds: ["s-1"], at: "2026-12-03T09:00:00Z" }
    })
    assert.include(full, "\n  context:    4,427 tokens, 2.2% of 200,000\n")
    assert.match(
      full,
      /\n {2}\S+: +the CLI could not write its session file \(ENOSPC, transcript\): part of its memory/
    )
  })

  it("a spawned agent on one line; a permission in words", () => {
    assert.strictEqual(
      AgentCommands.renderSpawned({ ...info, status: "idle", permission: "read_only" }),
      "scout is up: idle, pid 4242, model sonnet, read_only, in /p (session s-1)"
    )
    assert.strictEqual(AgentCommands.describePermission({ allow: [] }), "allow nothing")
  })

  it("what an interrupt did", () => {
    assert.strictEqual(
      AgentCommands.renderInterrupted({ name: "scout", interrupted: true, turnId: "t3" }),
      "interrupted turn t3 of scout (it ends with TurnInterrupted; queued turns go on)"
    )
    assert.strictEqual(
      AgentCommands.renderInterrupted({ name: "scout", interrupted: false, turnId: null }),
      "scout had no turn in flight: nothing was interrupted"
    )
  })

  it("a broadcast: each reply under its agent, each failure with its tag", () => {
    assert.strictEqual(
      AgentCommands.renderBroadcast([
        { name: "scout", done: true, ok: true, turnId: "t4", text: "one\ntwo", costUsd: 0.001 },
        { name: "helper", done: true, ok: false, error: { _tag: "TurnFailed", message: "HTTP 500" } }
      ]),
      "scout (t4, $0.0010): one\n  two\nhelper: TurnFailed: HTTP 500"
    )
    assert.strictEqual(AgentCommands.renderBroadcast([]), "no live agents: nothing was sent")
  })

  it("a finished wait: a turn's reply, or a run's outcome", () => {
    assert.strictEqual(AgentCommands.renderWaited({ result: { text: "hello" } }), "hello")
    const run = {
      kind: "run" as const,
      name: "r",
      text: "done",
      costUsd: 0.5,
      durationMs: 1000,
      modelCalls: 1,
      sessionId: "s",
      permissionDenials: []
    }
    assert.strictEqual(
      AgentCommands.renderWaited({ result: run }),
      "done\n— $0.5000 · 1.0s · 1 model call · session s"
    )
  })
})

describe("spawn's flags as the tool's arguments", () => {
  it.effect("only what was given, the directory made absolute, the timeout in seconds, the variables as a record", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* AgentCommands.spawnArgs("scout", none), { name: "scout", permission: "read_only" })
      const args = yield* AgentCommands.spawnArgs("scout", {
        ...none,
        cwd: Option.some("sub"),
        model: Option.some("opus"),
        allow: ["Read,Edit"],
        ask: ["Bash"],
        appendSystemPrompt: Option.some("Be brief."),
        timeout: Option.some(Duration.seconds(90)),
        env: ["A=1", "B=x=y"],
        label: ["team=a", "note=x=y"],
        role: Option.some("manager"),
        resume: Option.some("s-0"),
        host: Option.some("node-b"),
        stream: true
      })
      assert.deepStrictEqual(args, {
        name: "scout",
        permission: { allow: ["Read", "Edit"], ask: ["Bash"] },
        cwd: path.resolve("sub"),
        model: "opus",
        appendSystemPrompt: "Be brief.",
        turnTimeoutSeconds: 90,
        env: { A: "1", B: "x=y" },
        labels: { team: "a", note: "x=y" },
        role: "manager",
        resume: "s-0",
        host: "node-b",
        stream: true
      })
    }))

  it.effect("--sandbox is sandbox: true; hosts and (already absolute) paths make the object form", () =>
    Effect.gen(function*() {
      const plain = yield* AgentCommands.spawnArgs("scout", { ...none, sandbox: true })
      assert.strictEqual(plain.sandbox, true)
      const wider = yield* AgentCommands.spawnArgs("scout", {
        ...none,
        sandboxAllowHost: ["github.com", "127.0.0.1:8080"],
        sandboxWritable: ["/var/cache/x"]
      })
      assert.deepStrictEqual(wider.sandbox, {
        network: { allow: ["github.com", "127.0.0.1:8080"] },
        writable: ["/var/cache/x"]
      })
      assert.notProperty(yield* AgentCommands.spawnArgs("scout", none), "sandbox")
    }))

  it.effect("a permission given two ways is refused, naming the flag", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        AgentCommands.spawnArgs("scout", { ...none, permission: Option.some("full"), allow: ["Read"] })
      )
      assert.strictEqual(error.message, "--allow: give either --permission or --allow, not both")
    }))
})
