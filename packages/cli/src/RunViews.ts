/**
 * How the command shows runs, verifies and worktrees to a person: the list of async runs, one run's outcome (the
 * same footer `flotta run` prints), a verify's checks, a run's diff, the run worktrees of a repository and what `gc`
 * did. Pure functions of the data, whether it came from a running serve or from git here.
 */
import { type RunDiff, someFiles } from "@flotta/core/RunDiff"
import type { RunView } from "@flotta/core/RunList"
import type { GcResult } from "@flotta/core/WorktreeGc"
import type { VerifyResult, WorktreeInfo } from "@flotta/core/Worktrees"
import type { RunResult, VerifyReport } from "@flotta/mcp/Schemas"
import * as path from "node:path"

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** `350 ms`, `4.2 s`, `3 min 5 s`, `2 h 5 min`. */
export const describeDuration = (ms: number): string => {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`
  const seconds = Math.round(ms / 1000)
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min${seconds % 60 === 0 ? "" : ` ${seconds % 60} s`}`
  const minutes = Math.round(seconds / 60)
  return `${Math.floor(minutes / 60)} h${minutes % 60 === 0 ? "" : ` ${minutes % 60} min`}`
}

/** An ISO instant as `2026-12-03 08:00:01` (UTC). */
export const describeInstant = (iso: string): string => iso.replace("T", " ").replace(/(\.\d+)?Z$/, "")

/** Rows as aligned columns (the last one is not padded). */
export const table = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = rows.reduce<Array<number>>((w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), [])
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "))
    .join("\n")
}

/** Where a run stands in a word or three: `running`, `succeeded`, `failed (TurnFailed)`, `checks failed`. */
export const describeState = (view: RunView): string => {
  if (view.state === "failed") return `failed (${view.error ?? "?"})`
  if (view.kind === "verify" && view.passed !== null) return view.passed ? "passed" : "checks failed"
  return view.state
}

/**
 * The async runs as a table, newest first: name, kind, state, start (UTC), how long it took (or has run so far,
 * at `now`), cost, and its worktree's branch (or the branch a verify checked); the host too, in a cluster.
 */
export const renderRuns = (views: ReadonlyArray<RunView>, now: number): string => {
  if (views.length === 0) return "no runs"
  const hosts = views.some((v) => v.host !== undefined)
  const header = ["NAME", "KIND", "STATE", "STARTED (UTC)", "TOOK", "COST", "BRANCH", ...(hosts ? ["HOST"] : [])]
  const rows = views.map((v) => {
    const end = v.finishedAt === null ? now : Date.parse(v.finishedAt)
    const took = describeDuration(end - Date.parse(v.startedAt))
    return [
      v.name,
      v.kind,
      describeState(v),
      describeInstant(v.startedAt),
      v.finishedAt === null ? `${took} so far` : took,
      v.costUsd === null ? "-" : `$${v.costUsd.toFixed(4)}`,
      v.branch ?? "-",
      ...(hosts ? [v.host ?? "-"] : [])
    ]
  })
  return table([header, ...rows])
}

/** A run's outcome as a serve answers it (the engine's `RunResult` is one). */
export type RunAnswer = typeof RunResult.Type
/** A verify's outcome as a serve answers it (the engine's `VerifyReport` is one). */
export type VerifyAnswer = typeof VerifyReport.Type

/** `— $0.0012 · 4.2s · 1 model call · session … · worktree …`: what a run cost and where its work is. */
export const runFooter = (result: RunAnswer): string => {
  const parts = [
    `$${result.costUsd.toFixed(4)}`,
    `${(result.durationMs / 1000).toFixed(1)}s`,
    plural(result.modelCalls, "model call"),
    `session ${result.sessionId}`
  ]
  if (result.worktree !== undefined) {
    parts.push(result.worktree.removed ? `branch ${result.worktree.branch}` : `worktree ${result.worktree.path}`)
  }
  const footer = `— ${parts.join(" · ")}`
  return result.attempts === undefined ? footer : `${footer}
${renderAttempts(result)}`
}

/** A best-of-N run's attempts: which won, what all cost, and each attempt's fate, spend and branch. */
export const renderAttempts = (result: RunAnswer): string => {
  const attempts = result.attempts ?? []
  const head = `— attempt ${result.attempt ?? "?"} of ${attempts.length} won; all together $${
    (result.totalCostUsd ?? result.costUsd).toFixed(4)
  }`
  const rows = attempts.map((a) => {
    const failed = a.checks?.find((check) => !check.ok)
    const why = failed !== undefined
      ? `${failed.command} ${failed.timedOut ? "timed out" : `exited ${failed.exitCode ?? "without a code"}`}`
      : a.error !== null
      ? a.error._tag
      : ""
    const where = a.worktree === null ? "" : a.worktree.removed ? `branch ${a.worktree.branch}` : a.worktree.path
    return `  ${String(a.attempt).padStart(2)}  ${a.status.padEnd(11)} $${a.costUsd.toFixed(4)}  ${
      [why, where].filter((s) => s.length > 0).join(" · ")
    }`.trimEnd()
  })
  return [head, ...rows].join("\n")
}

const indent = (text: string, by: string) => text.split("\n").map((line) => `${by}${line}`).join("\n")

/** A verify's checks: the verdict, then each check (the output's tail under a failed one). */
export const renderVerify = (result: VerifyResult & { readonly name?: string }): string => {
  const failed = result.checks.filter((c) => !c.ok).length
  const label = result.name === undefined ? "verify" : `verify ${result.name}`
  const lines = [
    `${label}: ${result.branch} (${result.commit.slice(0, 12)}) ${
      result.passed ? "passed" : `failed ${failed} of ${plural(result.checks.length, "check")}`
    }`
  ]
  for (const check of result.checks) {
    const how = check.ok
      ? describeDuration(check.durationMs)
      : check.timedOut
      ? `timed out after ${describeDuration(check.durationMs)}`
      : `exit code ${check.exitCode ?? "none"}, ${describeDuration(check.durationMs)}`
    lines.push(`  ${check.ok ? "ok  " : "FAIL"}  ${check.command} (${how})`)
    const output = check.output.trimEnd()
    if (!check.ok && output.length > 0) lines.push(indent(output.split("\n").slice(-10).join("\n"), "        "))
  }
  return lines.join("\n")
}

/** One async run's outcome: a run's answer (its structured output as JSON, if any) and footer; a verify's checks. */
export const renderOutcome = (result: RunAnswer | VerifyAnswer): string => {
  if (result.kind === "verify") return renderVerify(result)
  const answer = result.structuredOutput === undefined ? result.text : JSON.stringify(result.structuredOutput, null, 2)
  return `${answer}\n${runFooter(result)}`
}

/** The run worktrees of a repository: path (from the repository's top), branch, clean or not, locked, age. */
export const renderWorktrees = (worktrees: ReadonlyArray<WorktreeInfo>, repo: string): string => {
  if (worktrees.length === 0) return "no run worktrees"
  const rows = worktrees.map((w) => [
    path.relative(repo, w.path) || w.path,
    w.branch.length === 0 ? "(detached)" : w.branch,
    [w.clean ? "clean" : "uncommitted changes", ...(w.locked ? ["locked (a run uses it)"] : [])].join(", "),
    describeDuration(w.ageMs)
  ])
  return table([["WORKTREE", "BRANCH", "STATE", "AGE"], ...rows])
}

/**
 * What `gc` did, a worktree per line: removed (its uncommitted work first committed to its branch, with the commit,
 * or discarded, each file named), or kept and why.
 */
export const renderGc = (result: GcResult, repo: string): string => {
  const shown = (p: string) => path.relative(repo, p) || p
  if (result.removed.length === 0 && result.kept.length === 0) return "no run worktrees"
  const committed = new Map(result.committed.map((c) => [c.path, c]))
  const discarded = new Map(result.discarded.map((d) => [d.path, d]))
  const removed = result.removed.map((p) => {
    const saved = committed.get(p)
    if (saved !== undefined) {
      return `removed ${shown(p)}: its uncommitted work (${someFiles(saved.files)}) was first committed to branch ` +
        `${saved.branch} (${saved.commit.slice(0, 12)})`
    }
    const dropped = discarded.get(p)
    if (dropped !== undefined) {
      return `removed ${shown(p)}: discarded its uncommitted changes to ${dropped.files.join(", ")}`
    }
    return `removed ${shown(p)}`
  })
  return [...removed, ...result.kept.map((k) => `kept ${shown(k.path)}: ${k.reason}`)].join("\n")
}

/** A run's diff as `git diff --stat` shows it (a file per line, the totals), then the patch unless asked not to. */
export const renderDiff = (diff: RunDiff, options: { readonly patch: boolean }): string => {
  const count = (n: number | null) => (n === null ? "bin" : String(n))
  const head = `${diff.name}: ${diff.branch} against ${diff.base.slice(0, 12)}` +
    (diff.running ? " (still running: its changes so far)" : "")
  const files = diff.files.length === 0
    ? ["no changes"]
    : table(diff.files.map((f) => [`+${count(f.added)}`, `-${count(f.removed)}`, f.path])).split("\n")
  const totals = `${plural(diff.files.length, "file")} changed, ${plural(diff.added, "line")} added, ` +
    `${plural(diff.removed, "line")} removed`
  const cut = diff.truncated
    ? [`(the patch is cut at ${new TextEncoder().encode(diff.patch).length} of its ${diff.patchBytes} bytes)`]
    : []
  const patch = options.patch && diff.patch.length > 0 ? ["", diff.patch.replace(/\n$/, ""), ...cut] : []
  return [head, ...files.map((line) => `  ${line}`), totals, ...patch].join("\n")
}
