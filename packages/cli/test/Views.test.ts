/**
 * What the command shows a person of the store and its records: the same text whether it came from a running
 * serve or from the store itself.
 */
import { assert, describe, it } from "@effect/vitest"
import type { TurnRecord } from "@flotta/core/Agent"
import type { RestoreReport } from "@flotta/core/Restore"
import type { StoreInfo } from "@flotta/core/Store"
import * as Views from "../src/Views.js"

const OK = { state: "ok", reason: null, since: null, pending: 0, lost: 0 } as const

const info = (overrides: Partial<StoreInfo> = {}): StoreInfo => ({
  kind: "sqlite",
  location: "/p/.flotta/state.db",
  schemaVersion: 1,
  sizeBytes: 48_000,
  health: OK,
  ...overrides
})

const record = (overrides: Partial<TurnRecord> = {}): TurnRecord => ({
  turnId: "t1",
  prompt: "What is in README.md?",
  status: "succeeded",
  reply: "A control plane.",
  error: null,
  toolCalls: [],
  permissions: [],
  costUsd: 0.0123,
  durationMs: 2300,
  modelCalls: 2,
  enqueuedAt: "2026-01-01T10:00:00.000Z",
  startedAt: "2026-01-01T10:00:01.000Z",
  finishedAt: "2026-01-01T10:00:03.300Z",
  ...overrides
})

const EMPTY: RestoreReport = { restored: [], closed: [], interruptedTurns: [], interruptedRuns: [], orphansEnded: [] }

describe("the store", () => {
  it("sizes in B, kB, MB and GB", () => {
    assert.deepStrictEqual(
      [0, 999, 1000, 48_213, 12_300_000, 1_200_000_000].map(Views.formatBytes),
      ["0 B", "999 B", "1.0 kB", "48.2 kB", "12.3 MB", "1.2 GB"]
    )
  })

  it("kind, place, schema version and size; memory says it does not last", () => {
    assert.strictEqual(Views.describeStore(info()), "sqlite /p/.flotta/state.db (schema v1, 48.0 kB)")
    assert.strictEqual(
      Views.describeStore(info({ driver: "node:sqlite" })),
      "sqlite /p/.flotta/state.db (schema v1, 48.0 kB, node:sqlite)"
    )
    assert.strictEqual(
      Views.describeStore(info({ kind: "postgres", location: "postgres://u:***@db/fleet", sizeBytes: null })),
      "postgres postgres://u:***@db/fleet (schema v1)"
    )
    assert.strictEqual(
      Views.describeStore(info({ kind: "memory", location: "memory" })),
      "memory (gone when the fleet stops)"
    )
  })

  it("health: ok, or degraded with its reason, since when, and what waits or was lost", () => {
    assert.strictEqual(Views.describeStoreWithHealth(info()), "sqlite /p/.flotta/state.db (schema v1, 48.0 kB), ok")
    const degraded = {
      state: "degraded",
      reason: "SQLITE_FULL: database or disk is full",
      since: "2026-01-01T10:00:00.000Z",
      pending: 12,
      lost: 1
    } as const
    assert.strictEqual(
      Views.describeHealth(degraded),
      "degraded since 2026-01-01T10:00:00.000Z: SQLITE_FULL: database or disk is full (12 writes waiting, " +
        "1 report entry lost)"
    )
    assert.strictEqual(
      Views.describeHealth({ ...degraded, pending: 0, lost: 0, since: null }),
      "degraded: SQLITE_FULL: database or disk is full"
    )
  })
})

describe("what came back at start", () => {
  it("nothing for a new store", () => {
    assert.deepStrictEqual(Views.describeRestore(EMPTY), [])
  })

  it("restored agents with their queued turns, closed ones with the reason (on one line), what was in flight", () => {
    const lines = Views.describeRestore({
      restored: [{ name: "scout", sessionId: "s1", queued: 2 }, { name: "librarian", sessionId: "s2", queued: 0 }],
      closed: [{ name: "ghost", reason: "could not be restored: exited\nstderr:\nNo conversation found" }],
      interruptedTurns: [{ name: "scout", turnId: "t3" }],
      interruptedRuns: ["issue-7"],
      orphansEnded: [{ name: "scout", pid: 4242 }]
    })
    assert.deepStrictEqual(lines, [
      "ended 1 claude process the previous host left running (scout pid 4242)",
      "restored 2 agents (scout with 2 queued turns, librarian), 1 closed: ghost (could not be restored: exited " +
      "stderr: No conversation found)",
      "1 turn was in flight when the host stopped, ended as HostRestarted and not sent again (scout t3)",
      "1 run was interrupted by the restart, worktrees kept (issue-7)"
    ])
    assert.deepStrictEqual(
      Views.describeRestore({ ...EMPTY, restored: [{ name: "a", sessionId: "s", queued: 1 }] }),
      ["restored 1 agent (a with 1 queued turn)"]
    )
  })
})

describe("transcripts and report entries", () => {
  it("a turn: prompt, tool calls, permission decisions, reply, cost and time", () => {
    const text = Views.renderTurn(record({
      toolCalls: [{ id: "tu1", name: "Read", input: { file_path: "README.md" } }],
      permissions: [
        { tool: "Read", input: { file_path: "README.md" }, decision: "allow" },
        { tool: "Bash", input: { command: "rm -rf /" }, decision: "deny", message: "not on the allow list" }
      ],
      reply: "A control plane.\nFor fleets."
    }))
    assert.strictEqual(
      text,
      [
        "t1  succeeded · $0.0123 · 2.3s · 2 model calls · started 2026-01-01T10:00:01.000Z",
        "  prompt:     What is in README.md?",
        "  tool:       Read {\"file_path\":\"README.md\"}",
        "  permission: allow Read {\"file_path\":\"README.md\"}",
        "  permission: deny Bash {\"command\":\"rm -rf /\"}: not on the allow list",
        "  reply:      A control plane.",
        "              For fleets."
      ].join("\n")
    )
  })

  it("each tool call's outcome under it: what it printed (its first lines), an error, or why it was refused", () => {
    const text = Views.renderTurn(record({
      toolCalls: [
        {
          id: "a",
          name: "Bash",
          input: { command: "seq 8" },
          outcome: { status: "ok", text: "1\n2\n3\n4\n5\n6\n7\n8", bytes: 15, truncated: false, durationMs: 1234 }
        },
        {
          id: "b",
          name: "Bash",
          input: { command: "false" },
          outcome: { status: "error", text: "Exit code 1", bytes: 11, truncated: false, durationMs: 40 }
        },
        {
          id: "c",
          name: "Write",
          input: { file_path: "x" },
          outcome: {
            status: "refused",
            text: "A human denied this tool call: not today",
            bytes: 40,
            truncated: false,
            durationMs: 60_000,
            refusal: { reason: "human", message: "A human denied this tool call: not today", by: "cli" }
          }
        },
        { id: "d", name: "Read", input: { file_path: "y" } }
      ],
      reply: "done"
    }))
    assert.strictEqual(
      text,
      [
        "t1  succeeded · $0.0123 · 2.3s · 2 model calls · started 2026-01-01T10:00:01.000Z",
        "  prompt:     What is in README.md?",
        "  tool:       Bash {\"command\":\"seq 8\"}",
        "              → ok · 15 B · 1.2s",
        "              1",
        "              2",
        "              3",
        "              4",
        "              5",
        "              6",
        "              … (15 B in all)",
        "  tool:       Bash {\"command\":\"false\"}",
        "              → error · 11 B · 0.0s",
        "              Exit code 1",
        "  tool:       Write {\"file_path\":\"x\"}",
        "              → refused: a human denied it (cli): A human denied this tool call: not today",
        "  tool:       Read {\"file_path\":\"y\"}",
        "  reply:      done"
      ].join("\n")
    )
  })

  it("a failed turn shows its error; a queued one when it was queued", () => {
    const failed = Views.renderTurn(record({
      status: "failed",
      reply: null,
      error: { _tag: "HostRestarted", message: "\"scout\" was running t1 when the host stopped" }
    }))
    assert.include(failed, "t1  failed · $0.0123")
    assert.include(failed, "  error:      HostRestarted: \"scout\" was running t1 when the host stopped")
    assert.notInclude(failed, "reply:")
    const queued = Views.renderTurn(record({ status: "queued", reply: null, startedAt: null, finishedAt: null }))
    assert.strictEqual(queued.split("\n")[0], "t1  queued · queued at 2026-01-01T10:00:00.000Z")
  })

  it("a transcript: a heading, turns oldest first; none yet; the last N of a longer one", () => {
    const two = Views.renderTranscript("scout", [record(), record({ turnId: "t2", prompt: "again" })])
    assert.match(two, /^scout: 2 turns\n\nt1 {2}succeeded[^]*\n\nt2 {2}succeeded[^]*prompt: {5}again/)
    assert.strictEqual(Views.renderTranscript("scout", []), "scout: no turns yet")
    assert.match(Views.renderTranscript("scout", [record()], 5), /^scout: 5 turns \(the last 1 of 5\)/)
    // A closed agent's, read from the store, says so at the top.
    assert.match(
      Views.renderTranscript("scout", [record()], 1, { reason: "by request", at: "2026-12-03T09:30:00.000Z" }),
      /^scout, closed 2026-12-03 09:30:00 UTC \(by request\): 1 turn\n\nt1 {2}succeeded/
    )
    assert.strictEqual(
      Views.renderTranscript("scout", [], 0, { reason: "by request" }),
      "scout, closed by request: no turns"
    )
  })

  it("a long tool input is cut short", () => {
    const text = Views.renderTurn(
      record({ toolCalls: [{ id: "x", name: "Write", input: { content: "x".repeat(500) } }] })
    )
    const line = text.split("\n").find((l) => l.includes("tool:"))!
    assert.isBelow(line.length, 280)
    assert.isTrue(line.endsWith("..."))
  })

  it("a report entry on one line", () => {
    assert.strictEqual(
      Views.formatEntry({
        seq: 7,
        at: "2026-01-01T10:00:00.000Z",
        agent: "scout",
        kind: "result",
        turnId: "t1",
        data: {}
      }),
      "     7 2026-01-01T10:00:00.000Z scout result t1 {}"
    )
  })
})

describe("parking at usage limits", () => {
  it("a parked agent's status says until when; any other status is its word", () => {
    assert.strictEqual(
      Views.describeStatus({ status: "parked", parkedUntil: "2026-05-01T14:00:00.000Z" }),
      "parked until 2026-05-01T14:00:00Z"
    )
    assert.strictEqual(Views.describeStatus({ status: "idle", parkedUntil: null }), "idle")
    assert.strictEqual(Views.describeStatus({ status: "working" }), "working")
  })

  it("one line per parked group: until when, its agents, its credentials' label and why", () => {
    assert.deepStrictEqual(
      Views.describeParking([
        {
          credentials: "api key #0a1b2c3d",
          reason: "usage_limit",
          rateLimitType: "five_hour",
          until: "2026-05-01T14:00:00.000Z",
          agents: ["a", "b"]
        },
        { credentials: "oauth token #ffffffff", reason: "rate_limited", rateLimitType: null, until: "x", agents: [] }
      ]),
      [
        "parked until 2026-05-01T14:00:00Z: a, b (api key #0a1b2c3d, usage limit five_hour)",
        "parked until x: no agent (oauth token #ffffffff, rate limited)"
      ]
    )
  })
})
