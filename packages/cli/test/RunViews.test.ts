/**
 * How runs, verifies and worktrees read for a person: the list of runs, one run's outcome, a verify's checks, a
 * repository's run worktrees and what gc did (pure functions; no process, no serve).
 */
import { assert, describe, it } from "@effect/vitest"
import type { RunResult, VerifyReport } from "@flotta/core/Run"
import type { RunView } from "@flotta/core/RunList"
import * as RunViews from "../src/RunViews.js"

const view = (fields: Partial<RunView> & Pick<RunView, "name">): RunView => ({
  kind: "run",
  state: "succeeded",
  startedAt: "2026-12-03T08:00:00.000Z",
  finishedAt: "2026-12-03T08:00:04.200Z",
  costUsd: 0.0123,
  worktree: null,
  branch: null,
  passed: null,
  error: null,
  ...fields
})

const NOW = Date.parse("2026-12-03T08:01:30.000Z")

describe("the list of runs", () => {
  it("is a table: state (with the error's tag, or a verify's verdict), start, time taken or so far, cost, branch", () => {
    const text = RunViews.renderRuns([
      view({ name: "long", state: "running", finishedAt: null, startedAt: "2026-12-03T08:00:00.000Z", costUsd: 0 }),
      view({ name: "fixer", branch: "worktree-fixer", worktree: "/r/.claude/worktrees/fixer" }),
      view({ name: "doomed", state: "failed", error: "TurnFailed", costUsd: null }),
      view({ name: "check", kind: "verify", passed: false, costUsd: null, branch: "main" })
    ], NOW)
    assert.strictEqual(
      text,
      [
        "NAME    KIND    STATE                STARTED (UTC)        TOOK               COST     BRANCH",
        "long    run     running              2026-12-03 08:00:00  1 min 30 s so far  $0.0000  -",
        "fixer   run     succeeded            2026-12-03 08:00:00  4.2 s              $0.0123  worktree-fixer",
        "doomed  run     failed (TurnFailed)  2026-12-03 08:00:00  4.2 s              -        -",
        "check   verify  checks failed        2026-12-03 08:00:00  4.2 s              -        main"
      ].join("\n")
    )
    assert.strictEqual(RunViews.renderRuns([], NOW), "no runs")
  })

  it("names each run's host in a cluster", () => {
    const text = RunViews.renderRuns([view({ name: "a", host: "node-a" }), view({ name: "b" })], NOW)
    assert.match(text.split("\n")[0]!, /BRANCH {2}HOST$/)
    assert.match(text.split("\n")[1]!, / {2}node-a$/)
    assert.match(text.split("\n")[2]!, / {2}-$/)
  })

  it("says durations in the unit a person reads", () => {
    assert.deepStrictEqual([350, 4200, 60_000, 185_000, 3_600_000, 7_500_000].map(RunViews.describeDuration), [
      "350 ms",
      "4.2 s",
      "1 min",
      "3 min 5 s",
      "1 h",
      "2 h 5 min"
    ])
    assert.strictEqual(RunViews.describeInstant("2026-12-03T08:00:01.123Z"), "2026-12-03 08:00:01")
  })
})

describe("one run's outcome", () => {
  const result: RunResult = {
    kind: "run",
    name: "fixer",
    text: "Fixed it.",
    costUsd: 0.0123,
    durationMs: 4200,
    modelCalls: 3,
    sessionId: "s-1",
    permissionDenials: [],
    worktree: { path: "/r/.claude/worktrees/fixer", branch: "worktree-fixer", removed: false }
  }

  it("is the answer, then the footer `flotta run` prints", () => {
    assert.strictEqual(
      RunViews.renderOutcome(result),
      "Fixed it.\n— $0.0123 · 4.2s · 3 model calls · session s-1 · worktree /r/.claude/worktrees/fixer"
    )
    const cleaned = { ...result, modelCalls: 1, worktree: { ...result.worktree!, removed: true } }
    assert.match(RunViews.renderOutcome(cleaned), / · 1 model call · session s-1 · branch worktree-fixer$/)
    const structured = { ...result, structuredOutput: { ok: true } }
    assert.match(RunViews.renderOutcome(structured), /^\{\n {2}"ok": true\n\}\n— /)
  })

  it("for a verify, is its checks, with the tail of a failed check's output", () => {
    const report: VerifyReport = {
      kind: "verify",
      name: "check",
      passed: false,
      branch: "feature",
      commit: "0123456789abcdef",
      checks: [
        { command: "npm test", ok: true, exitCode: 0, timedOut: false, durationMs: 1200, output: "all good" },
        { command: "npm run lint", ok: false, exitCode: 1, timedOut: false, durationMs: 300, output: "a\nb\n" },
        { command: "sleep 99", ok: false, exitCode: null, timedOut: true, durationMs: 60_000, output: "" }
      ]
    }
    assert.strictEqual(
      RunViews.renderOutcome(report),
      [
        "verify check: feature (0123456789ab) failed 2 of 3 checks",
        "  ok    npm test (1.2 s)",
        "  FAIL  npm run lint (exit code 1, 300 ms)",
        "        a",
        "        b",
        "  FAIL  sleep 99 (timed out after 1 min)"
      ].join("\n")
    )
    assert.strictEqual(
      RunViews.renderVerify({ ...report, passed: true, checks: [report.checks[0]!] }).split("\n")[0],
      "verify check: feature (0123456789ab) passed"
    )
  })
})

describe("worktrees and gc", () => {
  it("lists the run worktrees from the repository's top", () => {
    const text = RunViews.renderWorktrees([
      { path: "/r/.claude/worktrees/a", branch: "worktree-a", clean: false, locked: false, ageMs: 90_000 },
      { path: "/r/.claude/worktrees/b", branch: "worktree-b", clean: true, locked: true, ageMs: 500 }
    ], "/r")
    assert.strictEqual(
      text,
      [
        "WORKTREE             BRANCH      STATE                          AGE",
        ".claude/worktrees/a  worktree-a  uncommitted changes            1 min 30 s",
        ".claude/worktrees/b  worktree-b  clean, locked (a run uses it)  500 ms"
      ].join("\n")
    )
    assert.strictEqual(RunViews.renderWorktrees([], "/r"), "no run worktrees")
  })

  it("says what gc removed (the work it committed first, the work it dropped), what it kept, and why", () => {
    const files = ["a.ts", "b.ts", "c.ts", "d.ts", "e.ts", "f.ts", "g.ts"]
    assert.strictEqual(
      RunViews.renderGc({
        removed: ["/r/.claude/worktrees/a", "/r/.claude/worktrees/c", "/r/.claude/worktrees/d"],
        committed: [{
          path: "/r/.claude/worktrees/c",
          branch: "worktree-c",
          commit: "0123456789abcdef0123456789abcdef01234567",
          files
        }],
        discarded: [{ path: "/r/.claude/worktrees/d", branch: "worktree-d", files }],
        kept: [{ path: "/r/.claude/worktrees/b", reason: "it is locked" }]
      }, "/r"),
      [
        "removed .claude/worktrees/a",
        "removed .claude/worktrees/c: its uncommitted work (a.ts, b.ts, c.ts, d.ts, e.ts and 2 more) was first " +
        "committed to branch worktree-c (0123456789ab)",
        "removed .claude/worktrees/d: discarded its uncommitted changes to a.ts, b.ts, c.ts, d.ts, e.ts, f.ts, g.ts",
        "kept .claude/worktrees/b: it is locked"
      ].join("\n")
    )
    assert.strictEqual(
      RunViews.renderGc({ removed: [], committed: [], discarded: [], kept: [] }, "/r"),
      "no run worktrees"
    )
  })
})

describe("a run's diff", () => {
  const diff = {
    name: "fixer",
    worktree: "/r/.claude/worktrees/fixer",
    branch: "worktree-fixer",
    base: "0123456789abcdef0123456789abcdef01234567",
    files: [{ path: "src/a.ts", added: 12, removed: 3 }, { path: "logo.png", added: null, removed: null }],
    added: 12,
    removed: 3,
    patch: "diff --git a/src/a.ts b/src/a.ts\n+x\n",
    patchBytes: 300_000,
    truncated: true,
    running: false,
    at: "2026-12-03T08:00:04.200Z"
  }

  it("lists the files with their counts and the totals, then the patch and where it was cut", () => {
    assert.strictEqual(
      RunViews.renderDiff(diff, { patch: true }),
      "fixer: worktree-fixer against 0123456789ab\n" +
        "  +12   -3    src/a.ts\n" +
        "  +bin  -bin  logo.png\n" +
        "2 files changed, 12 lines added, 3 lines removed\n" +
        "\n" +
        "diff --git a/src/a.ts b/src/a.ts\n+x\n" +
        "(the patch is cut at 36 of its 300000 bytes)"
    )
  })

  it("with --stat, the files only; a run still going says so; no change says so", () => {
    const text = RunViews.renderDiff({ ...diff, files: [], added: 0, removed: 0, running: true }, { patch: false })
    assert.strictEqual(
      text,
      "fixer: worktree-fixer against 0123456789ab (still running: its changes so far)\n" +
        "  no changes\n" +
        "0 files changed, 0 lines added, 0 lines removed"
    )
  })
})
